// Package text decides which text the service accepts for storage. PostgreSQL
// refuses the NUL character in text and jsonb (SQLSTATE 22P05), and Go's JSON
// decoder silently turns a lone UTF-16 surrogate escape or an invalid UTF-8
// byte into U+FFFD, so such input is refused up front, by name, on every
// store, rather than half-accepted.
package text

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reason says why a string is refused.
type Reason string

// The reasons, in the words a client sees (see Fault.Detail).
const (
	// NUL is the character U+0000, written raw or as the escape \u0000.
	NUL Reason = "a NUL character (U+0000)"
	// LoneSurrogate is a \uD800-\uDFFF escape that is not half of a valid
	// surrogate pair; it encodes no character.
	LoneSurrogate Reason = "an unpaired UTF-16 surrogate escape"
	// InvalidUTF8 is a byte sequence that is not UTF-8.
	InvalidUTF8 Reason = "bytes that are not UTF-8"
)

// Reasons lists every Reason.
func Reasons() []Reason { return []Reason{NUL, LoneSurrogate, InvalidUTF8} }

// Fault locates a refused string.
type Fault struct {
	// Path is the dotted path of the string or object key at fault, with
	// array indexes as numbers ("schema.properties.name", "models.0"). A key
	// is named by itself, the refused part written as an escape (\u0000,
	// \ud800, \xff), so a path never holds what it reports.
	Path string
	// Key is true when the fault is in the object key that ends Path.
	Key    bool
	Reason Reason
}

// Detail is the fault in a sentence for the client.
func (f Fault) Detail() string {
	what := "field"
	if f.Key {
		what = "key"
	}
	if f.Path == "" {
		return "the request holds " + string(f.Reason) + ", which is not accepted in text"
	}
	return what + " " + strconv.Quote(f.Path) + " holds " + string(f.Reason) + ", which is not accepted in text"
}

// CheckString reports why s is refused, or ok when it is acceptable text: valid
// UTF-8 without NUL. (A decoded Go string holds no escapes, so a lone
// surrogate shows as invalid UTF-8 here if it was encoded raw.)
func CheckString(s string) (Reason, bool) {
	if strings.IndexByte(s, 0) >= 0 {
		return NUL, false
	}
	if !utf8.ValidString(s) {
		return InvalidUTF8, false
	}
	return "", true
}

// Check walks v, a decoded value (string, []string, map[string]string,
// map[string]any, []any, numbers, booleans, nil) or raw JSON ([]byte or
// json.RawMessage), and returns the first refused string or key with its
// path, or ok. Map keys are visited in sorted order. Other types are not
// inspected.
func Check(v any) (Fault, bool) {
	return check(v, nil)
}

func check(v any, path []string) (Fault, bool) {
	switch x := v.(type) {
	case string:
		if r, ok := CheckString(x); !ok {
			return Fault{Path: join(path), Reason: r}, false
		}
	case json.RawMessage:
		return check([]byte(x), path)
	case []byte:
		if len(x) == 0 {
			return Fault{}, true
		}
		f, ok := CheckJSON(x)
		switch {
		case ok || len(path) == 0:
		case f.Path == "":
			f.Path = join(path)
		default:
			f.Path = join(path) + "." + f.Path
		}
		return f, ok
	case []string:
		for i, s := range x {
			if r, ok := CheckString(s); !ok {
				return Fault{Path: join(append(path[:len(path):len(path)], strconv.Itoa(i))), Reason: r}, false
			}
		}
	case []any:
		for i, e := range x {
			if f, ok := check(e, append(path[:len(path):len(path)], strconv.Itoa(i))); !ok {
				return f, false
			}
		}
	case map[string]string:
		for _, k := range sortedKeys(x) {
			if f, ok := checkKey(k, path); !ok {
				return f, false
			}
			if r, ok := CheckString(x[k]); !ok {
				return Fault{Path: join(append(path[:len(path):len(path)], k)), Reason: r}, false
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if f, ok := checkKey(k, path); !ok {
				return f, false
			}
			if f, ok := check(x[k], append(path[:len(path):len(path)], k)); !ok {
				return f, false
			}
		}
	}
	return Fault{}, true
}

func checkKey(k string, path []string) (Fault, bool) {
	if r, ok := CheckString(k); !ok {
		return Fault{Path: join(append(path[:len(path):len(path)], Escape(k))), Key: true, Reason: r}, false
	}
	return Fault{}, true
}

// Storable is s when every store takes it, else s escaped (Escape): for text
// the service writes itself from what others said (a provider's error, a
// cancel reason), where refusing would lose the rest.
func Storable(s string) string {
	if _, ok := CheckString(s); ok {
		return s
	}
	return Escape(s)
}

// Escape writes s with NUL and bytes that are not UTF-8 as escapes (\u0000,
// \xff), as Fault paths name a refused key.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0:
			b.WriteString(`\u0000`)
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func join(path []string) string { return strings.Join(path, ".") }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
