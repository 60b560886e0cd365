package relmap

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

func TestLiteral(t *testing.T) {
	cases := []struct {
		name string
		v    any
		typ  string
		want string
		err  bool
	}{
		{"null", nil, TypeBigint, "NULL::bigint", false},
		{"plain", "Acme", TypeText, "'Acme'::text", false},
		{"quote", "O'Brien", TypeText, "'O''Brien'::text", false},
		{"backslash", `C:\temp\'x`, TypeText, `E'C:\\temp\\''x'::text`, false},
		{"injection", "x'); DROP TABLE t; --", TypeText, "'x''); DROP TABLE t; --'::text", false},
		{"unicode", "Zürich 東京 🚀", TypeText, "'Zürich 東京 🚀'::text", false},
		{"dollar", "$$ $tag$", TypeText, "'$$ $tag$'::text", false},
		{"nul", "a\x00b", TypeText, "", true},
		{"invalid utf8", "a\xffb", TypeText, "", true},
		{"number as text", json.Number("12.5"), TypeText, "'12.5'::text", false},
		{"bool as text", true, TypeText, "'true'::text", false},
		{"integer", json.Number("-42"), TypeBigint, "'-42'::bigint", false},
		{"integer exponent", json.Number("1e3"), TypeBigint, "'1000'::bigint", false},
		{"integer fraction", json.Number("1.5"), TypeBigint, "", true},
		{"integer overflow", json.Number("9223372036854775808"), TypeBigint, "", true},
		{"integer max", json.Number("9223372036854775807"), TypeBigint, "'9223372036854775807'::bigint", false},
		{"smallint overflow", json.Number("40000"), "smallint", "", true},
		{"numeric", json.Number("-0.5e-10"), TypeNumeric, "'-0.5e-10'::numeric", false},
		{"numeric string", "3.25", TypeNumeric, "'3.25'::numeric", false},
		{"not a number", "1; DROP", TypeNumeric, "", true},
		{"hex number", "0x10", TypeNumeric, "", true},
		{"NaN", "NaN", TypeNumeric, "", true},
		{"leading zero", "012", TypeNumeric, "", true},
		{"huge number", json.Number("1" + strings.Repeat("0", 500)), TypeNumeric, "", true},
		{"double out of range", json.Number("1e400"), TypeDouble, "", true},
		{"bool number", true, TypeNumeric, "", true},
		{"boolean", false, TypeBoolean, "'false'::boolean", false},
		{"boolean string", "true", TypeBoolean, "", true},
		{"date", "2024-02-29", TypeDate, "'2024-02-29'::date", false},
		{"bad date", "2023-02-29", TypeDate, "", true},
		{"timestamp", "2024-01-02T03:04:05.5+01:00", TypeTimestamp, "'2024-01-02T03:04:05.5+01:00'::timestamptz", false},
		{"bad timestamp", "yesterday", TypeTimestamp, "", true},
		{"uuid", "0190A5C4-7B2E-7C3D-8E4F-0123456789AB", TypeUUID, "'0190A5C4-7B2E-7C3D-8E4F-0123456789AB'::uuid", false},
		{"bad uuid", "0190a5c4", TypeUUID, "", true},
		{"object for text", map[string]any{"a": "b"}, TypeText, "", true},
		{"jsonb", map[string]any{"a": []any{json.Number("1"), "it's", `b\c`, "<&>"}}, TypeJSONB, `E'{"a":[1,"it''s","b\\\\c","<&>"]}'::jsonb`, false},
		{"jsonb string", "x", TypeJSONB, `'"x"'::jsonb`, false},
		{"jsonb nul", map[string]any{"a": "\x00"}, TypeJSONB, "", true},
		{"jsonb nul key", map[string]any{"\x00": 1}, TypeJSONB, "", true},
		{"jsonb bad number", []any{json.Number("1x")}, TypeJSONB, "", true},
		{"varchar", "ab", "varchar(5)", "'ab'::varchar(5)", false},
		{"varchar counts characters", "東京東京東", "varchar(5)", "'東京東京東'::varchar(5)", false},
		{"varchar too long", "abcdef", "varchar(5)", "", true},
		{"char too long", "abc", "char(2)", "", true},
		{"huge exponent", json.Number("1e999999999"), TypeBigint, "", true},
		{"huge exponent numeric", "1E-999999999", TypeNumeric, "", true},
		{"huge exponent in jsonb", []any{json.Number("1e99999")}, TypeJSONB, "", true},
		{"exponent at the bound", json.Number("1e1000"), TypeNumeric, "'1e1000'::numeric", false},
		{"year zero", "0000-01-01", TypeDate, "", true},
		{"time", "23:59:59.123456", "time", "'23:59:59.123456'::time", false},
		{"time with zone", "08:00+02:00", "time", "'08:00+02:00'::time", false},
		{"bad time", "25:00", "time", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			got, err := Literal(c.v, c.typ)
			if c.err {
				is.True(errors.Is(err, ErrValue))
				return
			}
			is.NoErr(err)
			is.Equal(got, c.want)
		})
	}
}

// parseLiteral reads a string literal the way PostgreSQL does, with
// standard_conforming_strings on or off, and returns its value and what
// follows it. ok is false when the text is not one well-formed literal or
// uses an escape other than \\ and \'.
func parseLiteral(s string, conforming bool) (val, rest string, ok bool) {
	escapes := !conforming
	switch {
	case strings.HasPrefix(s, "E'"):
		escapes, s = true, s[2:]
	case strings.HasPrefix(s, "'"):
		s = s[1:]
	default:
		return "", "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == '\'':
			return b.String(), s[i+1:], true
		case c == '\\' && escapes:
			if i+1 >= len(s) || (s[i+1] != '\\' && s[i+1] != '\'') {
				return "", "", false
			}
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

func checkRoundTrip(t *testing.T, lit, want, cast string) {
	t.Helper()
	for _, conforming := range []bool{true, false} {
		val, rest, ok := parseLiteral(lit, conforming)
		if !ok || val != want || rest != cast {
			t.Fatalf("standard_conforming_strings=%v: %q reads as %q then %q (ok %v), want %q then %q", conforming, lit, val, rest, ok, want, cast)
		}
	}
}

func TestParseLiteralSeesTheDanger(t *testing.T) {
	is := is.New(t)
	// The naive rendering of a backslash before a quote breaks out of the
	// literal when standard_conforming_strings is off; ours does not.
	_, rest, ok := parseLiteral(`'a\'' OR 1=1 --'`, false)
	is.True(ok && rest != "")
	lit, err := QuoteString(`a\' OR 1=1 --`)
	is.NoErr(err)
	checkRoundTrip(t, lit+"::text", `a\' OR 1=1 --`, "::text")
}

func FuzzLiteral(f *testing.F) {
	for _, s := range []string{"", "plain", "O'Brien", `back\slash`, `\'`, `'\`, "''", `\\'\\`, "a\x00b", "\xff", "東京",
		"x'); DROP TABLE t; --", "$$", "E'", "\u2028", "\ufffd", strings.Repeat("'\\", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit, err := Literal(s, TypeText)
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			if !errors.Is(err, ErrValue) {
				t.Fatalf("%q: want ErrValue, got %v", s, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		checkRoundTrip(t, lit, s, "::text")

		// the same string inside a jsonb value
		jl, err := Literal(map[string]any{s: []any{s}}, TypeJSONB)
		if err != nil {
			t.Fatalf("jsonb %q: %v", s, err)
		}
		for _, conforming := range []bool{true, false} {
			val, rest, ok := parseLiteral(jl, conforming)
			var back map[string][]string
			if !ok || rest != "::jsonb" || json.Unmarshal([]byte(val), &back) != nil || len(back[s]) != 1 || back[s][0] != s {
				t.Fatalf("jsonb %q reads as %q then %q", s, val, rest)
			}
		}

		// and as a number: accepted only in the JSON grammar, quoted
		if nl, err := Literal(s, TypeNumeric); err == nil {
			val, rest, ok := parseLiteral(nl, true)
			if !ok || rest != "::numeric" || !jsonNumber.MatchString(val) {
				t.Fatalf("number %q rendered as %q", s, nl)
			}
		}
	})
}
