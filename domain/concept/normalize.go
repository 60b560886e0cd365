package concept

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalize is the form identity texts are compared in (REFERENCE.md §7):
// lower case, parentheticals removed, runs of white space collapsed to one
// space, trimmed. It is Unicode-aware and idempotent
// (Normalize(Normalize(s)) == Normalize(s)).
//
//   - Lower case is Unicode simple lower case, rune by rune (so "İ" and
//     "Ä" fold too).
//   - A parenthetical is a balanced pair of parentheses, ASCII or
//     full-width, with what it holds, nested pairs included: "IBM (US)"
//     becomes "ibm". It is replaced by a space, so "A(b)C" becomes "a c".
//     An unbalanced parenthesis is dropped but the text around it kept:
//     "Acme (Europe" becomes "acme europe", so a typo loses no words.
//   - White space is any Unicode space; control characters, bytes that are
//     not UTF-8 and U+FFFD count as space too, so that what was never text
//     (a NUL, a lone surrogate decoded as U+FFFD) cannot reach a store.
func Normalize(s string) string {
	runes := []rune(s)
	drop := parentheticals(runes)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i, r := range runes {
		if drop[i] || isBlank(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// isBlank reports whether r separates words: white space, a control
// character, or what stands for a byte that was not UTF-8.
func isBlank(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError ||
		unicode.Is(unicode.Cs, r)
}

func opens(r rune) bool  { return r == '(' || r == '（' }
func closes(r rune) bool { return r == ')' || r == '）' }

// parentheticals marks the runes to drop: every rune of a balanced pair of
// parentheses and between them, and every unbalanced parenthesis.
func parentheticals(runes []rune) []bool {
	drop := make([]bool, len(runes))
	var open []int
	for i, r := range runes {
		switch {
		case opens(r):
			open = append(open, i)
		case closes(r) && len(open) > 0:
			start := open[len(open)-1]
			open = open[:len(open)-1]
			for j := start; j <= i; j++ {
				drop[j] = true
			}
		case closes(r):
			drop[i] = true
		}
	}
	for _, i := range open {
		drop[i] = true
	}
	return drop
}
