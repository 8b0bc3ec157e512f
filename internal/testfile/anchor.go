package testfile

import (
	"strings"
	"unicode"
)

// Anchor is the anchor GitHub gives a Markdown heading: lower case, letters,
// digits, hyphens and underscores kept, spaces made hyphens, the rest
// dropped. The doc tests check links to headings, and generate them, by it.
func Anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
