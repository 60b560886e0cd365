package sandbox

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// fromRegexp builds a string matching pattern by walking its syntax tree:
// the first alternative, the minimum repetition plus reps, and a readable
// member of each character class. ok is false for a pattern it cannot
// satisfy (or that Go cannot parse); the caller still checks the result.
func fromRegexp(pattern string, reps int) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var sb strings.Builder
	if !emit(&sb, re.Simplify(), reps, 0) {
		return "", false
	}
	return sb.String(), true
}

func emit(sb *strings.Builder, re *syntax.Regexp, reps, depth int) bool {
	if depth > 200 || sb.Len() > maxLength {
		return false
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			sb.WriteRune(r)
		}
		return true
	case syntax.OpCharClass:
		r, ok := classRune(re.Rune)
		if ok {
			sb.WriteRune(r)
		}
		return ok
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		sb.WriteByte('a')
		return true
	case syntax.OpCapture:
		return emit(sb, re.Sub[0], reps, depth+1)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		n := reps
		if re.Op == syntax.OpPlus {
			n = max(1, reps)
		}
		if re.Op == syntax.OpQuest {
			n = min(1, reps)
		}
		for range n {
			if !emit(sb, re.Sub[0], reps, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpRepeat:
		n := re.Min
		if reps > n {
			n = reps
			if re.Max >= 0 && n > re.Max {
				n = re.Max
			}
		}
		n = min(n, maxLength)
		for range n {
			if !emit(sb, re.Sub[0], reps, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !emit(sb, sub, reps, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			var try strings.Builder
			if emit(&try, sub, reps, depth+1) {
				sb.WriteString(try.String())
				return true
			}
		}
		return false
	}
	return false
}

// classRune picks a member of a character class (pairs of lo, hi),
// preferring a letter or digit so that values stay readable.
func classRune(ranges []rune) (rune, bool) {
	if len(ranges) < 2 {
		return 0, false
	}
	for _, want := range []rune{'a', 'A', '0'} {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= want && want <= ranges[i+1] {
				return want, true
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r-ranges[i] < 256; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r, true
			}
		}
	}
	return ranges[0], true
}
