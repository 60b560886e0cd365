package httpapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/concept"
)

func TestParseConceptCSV(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		texts      []string
		lines      []int
		typ, field string
	}{
		{"plain", "text\nIBM\nAcme\n", []string{"IBM", "Acme"}, []int{2, 3}, "", ""},
		{"BOM and CRLF", "\ufefftext\r\nIBM\r\nAcme", []string{"IBM", "Acme"}, []int{2, 3}, "", ""},
		{"mixed endings", "text\r\nA\nB\r\nC\n", []string{"A", "B", "C"}, []int{2, 3, 4}, "", ""},
		{"quoted newline", "text\n\"Globex\r\nCorp\"\nX\n", []string{"Globex\nCorp", "X"}, []int{2, 4}, "", ""},
		{"export header", "id,concept_type,canonical_text,aliases\n1,company,IBM,\"[\"\"I.B.M.\"\"]\"\n", []string{"IBM"}, []int{2}, "company", ""},
		{"header case and blanks", " Text , CONCEPT_TYPE\nA,city\nB,\n\n C ,city\n", []string{"A", "B", " C "}, []int{2, 3, 5}, "city", ""},
		{"blank text kept", "text\n\"\"\nA\n", []string{"", "A"}, []int{2, 3}, "", ""},
		{"wrong header", "name\nA\n", nil, nil, "", "text"},
		{"empty", "", nil, nil, "", "text"},
		{"no rows", "text\n", nil, nil, "", "texts"},
		{"NUL", "text\nA\x00\n", nil, nil, "", "line 2"},
		{"NUL in another column", "text,note\nA,ok\nB,x\x00\n", nil, nil, "", "line 3"},
		{"NUL in header", "text,no\x00te\nA,ok\n", nil, nil, "", "line 1"},
		{"lone surrogate", "text\nA\n\xed\xa0\x80\n", nil, nil, "", "line 3"},
		{"two types", "text,concept_type\nA,x\nB,y\n", nil, nil, "", "line 3"},
		{"bare quote", "text\na\"b\n", nil, nil, "", "line 2"},
		{"too many", "text\n1\n2\n3\n4\n", nil, nil, "", "texts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := parseConceptCSV(strings.NewReader(tt.body), 3)
			if tt.field != "" {
				e, ok := app.AsError(err)
				is.True(ok) // a refusal naming its field
				is.Equal(e.Field, tt.field)
				return
			}
			is.NoErr(err)
			is.Equal(got.Texts, tt.texts)
			is.Equal(got.Lines, tt.lines)
			is.Equal(got.ConceptType, tt.typ)
		})
	}
}

// TestExportRecordRoundTrip: aliases and vectors read back as written,
// separators and quotes included, through the CSV writer and reader.
func TestExportRecordRoundTrip(t *testing.T) {
	is := is.New(t)
	c := &concept.Concept{ID: "c1", Type: "company", CanonicalText: "IBM, \"Big Blue\"", RefCount: 3, EmbeddingModel: "builtin::ngram-384",
		Dims: 3, CreatedAt: time.Date(2026, 11, 28, 1, 2, 3, 4000, time.UTC), Aliases: []concept.Alias{
			{Text: "IBM, \"Big Blue\"", IsCanonical: true}, {Text: "I | B | M"}, {Text: "line\nbreak"}}}
	vec := []float32{0.1, -1e-7, 3.4028235e38}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	is.NoErr(w.Write(exportRecord(app.ConceptExportRow{Concept: c, Embedding: vec}, true)))
	w.Flush()
	rec, err := csv.NewReader(&buf).Read()
	is.NoErr(err)
	is.Equal(rec[2], c.CanonicalText)
	var aliases []string
	is.NoErr(json.Unmarshal([]byte(rec[3]), &aliases))
	is.Equal(aliases, []string{"I | B | M", "line\nbreak"})
	is.Equal(rec[7], "2026-11-28T01:02:03.000004Z")
	var back []float32
	is.NoErr(json.Unmarshal([]byte(rec[8]), &back))
	is.Equal(back, vec)
}

// FuzzParseConceptCSV: whatever the body, the parser answers texts that
// hold only storable text (one line number each, within the limit) or a
// refusal naming a field, and never panics.
func FuzzParseConceptCSV(f *testing.F) {
	for _, s := range []string{
		"text\nIBM\n", "\ufefftext,concept_type\r\nA,company\nB,\r\n", "text\n\"a\r\nb\"\n", "name\nx\n", "",
		"text\nA\x00\n", "text\n\xed\xa0\x80\n", "text\n\"unterminated\n", "a,text\n1\n", "text,concept_type\nA,x\nB,y\n",
		"canonical_text,aliases\nIBM,\"[\"\"x\"\"]\"\n", "text\n\n\n\nA\n", "\"te\"\"xt\"\nA\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseConceptCSV(bytes.NewReader(body), 5)
		if err != nil {
			e, ok := app.AsError(err)
			if !ok || (e.Field == "" && !strings.HasPrefix(e.Detail, "the CSV")) {
				t.Fatalf("refusal %v names no field", err)
			}
			return
		}
		if len(got.Texts) == 0 || len(got.Texts) > 5 || len(got.Lines) != len(got.Texts) {
			t.Fatalf("%d texts, %d lines", len(got.Texts), len(got.Lines))
		}
		for i, s := range got.Texts {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("text %d %q is not storable", i, s)
			}
			if got.Lines[i] < 2 || (i > 0 && got.Lines[i] <= got.Lines[i-1]) {
				t.Fatalf("lines %v", got.Lines)
			}
		}
	})
}
