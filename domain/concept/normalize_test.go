package concept_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"IBM", "ibm"},
		{"  International   Business\tMachines\nCorp. ", "international business machines corp."},
		{"IBM (US)", "ibm"},
		{"IBM (US) Corp", "ibm corp"},
		{"A(b)C", "a c"},
		{"Acme (Europe (West)) Ltd", "acme ltd"},
		{"Acme (Europe", "acme europe"},
		{"Acme) Ltd", "acme ltd"},
		{")(", ""},
		{"(only a parenthetical)", ""},
		{"Société Générale", "société générale"},
		{"ÄRZTE ÖSTERREICH", "ärzte österreich"},
		{"ΑΘΗΝΑ", "αθηνα"},
		{"東京（日本）", "東京"},
		{"a\u00a0b\u2003c", "a b c"},
		{"nul\x00byte", "nul byte"},
		{"bad\xffutf8", "bad utf8"},
		{"ctl\u0007bell", "ctl bell"},
		{"", ""},
		{"   ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got := concept.Normalize(tt.in)
			is.Equal(got, tt.want)
			is.Equal(concept.Normalize(got), got) // idempotent
		})
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"IBM", "International Business Machines Corp. (IBM)", "A(b)C", "((x)", "x))(", "İSTANBUL",
		"Straße", "ǅemal", "ΣΊΣΥΦΟΣ", "東京（日本）", "a\u00a0b", "\x00", "\xff\xfe", "\xed\xa0\x80", "\u2028x\u2029", "  a  b  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := concept.Normalize(s)
		if again := concept.Normalize(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, again)
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "()（）\x00\uFFFD") {
			t.Fatalf("%q -> %q holds what Normalize removes", s, got)
		}
		if got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
			t.Fatalf("%q -> %q: white space not collapsed", s, got)
		}
		for _, r := range got {
			if r != ' ' && (unicode.IsSpace(r) || unicode.IsControl(r)) || unicode.ToLower(r) != r {
				t.Fatalf("%q -> %q holds %q", s, got, r)
			}
		}
	})
}
