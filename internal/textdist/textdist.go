// Package textdist measures how far apart two words are, for the "did you
// mean …" suggestions of the rebuild and rules files and of resource names.
package textdist

import "strings"

// Distance is the Levenshtein distance between a and b: the fewest
// single-byte insertions, deletions and substitutions that turn a into b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Swapped reports whether b is a with two adjacent bytes swapped ("plna",
// "plan"): one slip of the fingers that Distance counts as two edits.
func Swapped(a, b string) bool {
	if len(a) != len(b) || a == b {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
}

// Nearest returns the candidates nearest to word, all of them when they are
// as near, if any is within a third of word's length in edits (at least 1,
// at most 3; two swapped letters count as one edit), compared without case:
// the did-you-mean of a value from a fixed list.
func Nearest(word string, candidates []string) []string {
	best, out := 4, []string(nil)
	lw := strings.ToLower(word)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := Distance(lw, lc)
		if Swapped(lw, lc) {
			d = 1
		}
		switch {
		case d > min(3, max(1, len(word)/3)) || d > best:
		case d < best:
			best, out = d, []string{c}
		default:
			out = append(out, c)
		}
	}
	return out
}
