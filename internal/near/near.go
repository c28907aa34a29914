// Package near is for loopguard's error messages and commands that suggest what the user
// probably meant: the known words nearest to a mistyped one.
package near

import (
	"sort"
	"strings"
)

// Distance is the Levenshtein distance between a and b, compared without case: a kind or a
// code typed in the wrong case is one step from the right one, not several.
func Distance(a, b string) int {
	if strings.EqualFold(a, b) {
		if a == b {
			return 0
		}
		return 1
	}
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Words returns up to n candidates nearest to word, nearest first (ties in the candidates'
// order), leaving out those further than a third of the word's length (at least 2) and
// word itself. A candidate that contains word counts as near.
func Words(word string, candidates []string, n int) []string {
	limit := max(len(word)/3, 2)
	type scored struct {
		s string
		d int
		i int
	}
	var out []scored
	lw := strings.ToLower(word)
	for i, c := range candidates {
		if c == word {
			continue
		}
		d := Distance(word, c)
		if lc := strings.ToLower(c); len(lw) >= 3 && strings.Contains(lc, lw) && d > limit {
			d = limit
		}
		if d <= limit {
			out = append(out, scored{c, d, i})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].d < out[j].d })
	if len(out) > n {
		out = out[:n]
	}
	words := make([]string, len(out))
	for i, s := range out {
		words[i] = s.s
	}
	return words
}
