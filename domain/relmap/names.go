package relmap

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
)

// MaxIdentLen is PostgreSQL's identifier limit in bytes (NAMEDATALEN-1):
// a longer name is silently truncated by the server, so two long names
// could meet. Every name this package makes fits.
const MaxIdentLen = 63

// hashLen is the length of the hex hash suffix that makes a truncated or
// colliding name unique.
const hashLen = 8

// Ident turns a property name (or a path of them joined with "_") into a
// lower snake case identifier of [a-z0-9_]: camelCase is split, every other
// character becomes "_", runs of "_" collapse, and a name that would be
// empty or start with a digit is prefixed. When the conversion lost
// characters (non-ASCII letters, punctuation) the result carries a hash of
// the original, so that "名前" and "名字" stay apart.
func Ident(s string) string {
	var b strings.Builder
	lossy := false
	prev := rune(0)
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if prev >= 'a' && prev <= 'z' || prev >= '0' && prev <= '9' {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '_' || r == ' ' || r == '-' || r == '.':
			b.WriteByte('_')
		default:
			lossy = true
			b.WriteByte('_')
		}
		prev = r
	}
	out := collapse(b.String())
	if out == "" {
		out = "c"
		lossy = true
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "c_" + out
	}
	if lossy {
		out += "_" + shortHash(s)
	}
	return Fit(out)
}

func collapse(s string) string {
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	return strings.Trim(s, "_")
}

// Fit makes an identifier at most MaxIdentLen bytes: a longer one keeps
// its first bytes and ends with "_" and a hash of the whole name, so the
// truncation is deterministic and two long names sharing a prefix differ.
func Fit(name string) string {
	if len(name) <= MaxIdentLen {
		return name
	}
	head := strings.TrimRight(name[:MaxIdentLen-hashLen-1], "_")
	return head + "_" + shortHash(name)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// QuoteIdent quotes an identifier for SQL. Every name of a Map is quoted,
// so reserved words ("order", "user", "select") are plain column names.
// Names made here hold only [a-z0-9_]; a double quote is still doubled.
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// scope hands out unique names in one namespace (the relations of the
// target schema, or the columns of one table). An owner (a stable source
// description) always gets the same name within a scope; a name pinned by
// an earlier projection is kept, so adding a property never renames a
// column that has shipped.
type scope struct {
	used   map[string]string // name -> owner
	pinned map[string]string // owner -> name
}

func newScope(pinned map[string]string, taken ...string) *scope {
	s := &scope{used: map[string]string{}, pinned: map[string]string{}}
	for owner, name := range pinned {
		s.pinned[owner] = name
		s.used[name] = owner
	}
	for _, name := range taken {
		if _, ok := s.used[name]; !ok {
			s.used[name] = "taken:" + name
		}
	}
	return s
}

// reserve claims a fixed name (system columns); false when it is taken.
func (s *scope) reserve(owner, name string) bool {
	if o, ok := s.used[name]; ok && o != owner {
		return false
	}
	s.used[name] = owner
	return true
}

// alloc names owner, preferring desired; on a collision the name gets a
// hash of its owner, then of owner and a counter.
func (s *scope) alloc(owner, desired string) string {
	if n, ok := s.pinned[owner]; ok {
		return n
	}
	try := []string{Fit(desired), Fit(desired + "_" + shortHash(owner))}
	for _, n := range try {
		if s.reserve(owner, n) {
			return n
		}
	}
	for i := 2; ; i++ {
		n := Fit(desired + "_" + shortHash(owner+"#"+strconv.Itoa(i)))
		if s.reserve(owner, n) {
			return n
		}
	}
}
