// Package textdist measures how far apart two words are, for the "did you
// mean …" suggestions of the rebuild and rules files and of resource names.
package textdist

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
