package e2e_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

type importRow struct {
	Text        string   `json:"text"`
	Normalized  string   `json:"normalized"`
	Outcome     string   `json:"outcome"`
	SemanticID  *string  `json:"semantic_id"`
	Similarity  *float64 `json:"similarity"`
	MatchedText *string  `json:"matched_text"`
}

type importResult struct {
	ConceptType    string      `json:"concept_type"`
	Minted         bool        `json:"minted"`
	Rows           []importRow `json:"rows"`
	ExactCount     int         `json:"exact_count"`
	WouldMintCount int         `json:"would_mint_count"`
	MintedCount    int         `json:"minted_count"`
	SkippedCount   int         `json:"skipped_count"`
}

func rowOutcomes(r importResult) []string {
	var out []string
	for _, row := range r.Rows {
		out = append(out, row.Outcome)
	}
	return out
}

// importCSV posts a CSV body to the import with query q.
func (s *service) importCSV(cred, q, body string) (int, []byte) {
	s.t.Helper()
	st, raw, _ := s.raw("POST", "/api/semantic-concepts/import"+q, cred, "text/csv; charset=utf-8", []byte(body))
	return st, raw
}

// exportRows downloads the export with query q and returns its records,
// header first.
func (s *service) exportRows(cred, q string) [][]string {
	s.t.Helper()
	st, raw, h := s.raw("GET", "/api/semantic-concepts/export"+q, cred, "", nil)
	if st != 200 {
		s.t.Fatalf("export %s: %d %s", q, st, raw)
	}
	if h.Get("Content-Type") != "text/csv; charset=utf-8" || h.Get("Content-Disposition") != "attachment; filename=concepts.csv" {
		s.t.Fatalf("export headers: %v", h)
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		s.t.Fatalf("export is not CSV: %v\n%s", err, raw)
	}
	return recs
}

// TestConceptImportExport runs the import (JSON and CSV) and the export on
// every backend: a report writes nothing, minting needs the owner, hostile
// CSVs are refused naming their line with nothing written, and an export
// imports into another organization as the same vocabulary.
func TestConceptImportExport(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			home, other := s.register("home@example.com"), s.register("other@example.com")
			editor := s.newKey(home.token, "editor")
			operator := s.newKey(home.token, "operator")
			count := func(cred string) int { return len(s.exportRows(cred, "")) - 1 }

			// JSON report: nothing written; a later duplicate is exact.
			var rep importResult
			is.Equal(s.call("POST", "/api/semantic-concepts/import", editor, obj{"concept_type": "company",
				"texts": []string{"IBM", " ", "Acme Corp", "ibm"}}, &rep), 200)
			is.Equal(rowOutcomes(rep), []string{"would_mint", "skipped", "would_mint", "exact"})
			is.Equal(rep.WouldMintCount, 2)
			is.Equal(count(home.key), 0)
			// Minting: the editor is refused, the operator cannot even report.
			is.Equal(s.call("POST", "/api/semantic-concepts/import", editor, obj{"concept_type": "company", "texts": []string{"IBM"}, "mint": true}, nil), 403)
			is.Equal(s.call("POST", "/api/semantic-concepts/import", operator, obj{"concept_type": "company", "texts": []string{"IBM"}}, nil), 403)
			is.Equal(count(home.key), 0)

			// A CSV from a spreadsheet: BOM, mixed line endings, a quoted
			// field with a line break, a concept_type column.
			sheet := "\ufefftext,concept_type,note\r\nIBM,company,first\n\"Globex\nCorporation\",company,\"multi, line\"\r\nInitech,,\n"
			st, raw := s.importCSV(home.key, "?mint=true", sheet)
			is.Equal(st, 200)
			minted := decodeAs[importResult](t, raw)
			is.Equal(minted.ConceptType, "company")
			is.Equal(rowOutcomes(minted), []string{"minted", "minted", "minted"})
			is.Equal(minted.Rows[1].Text, "Globex\nCorporation")
			is.Equal(count(home.key), 3)
			st, raw = s.importCSV(home.key, "?mint=true", sheet)
			is.Equal(st, 200)
			is.Equal(rowOutcomes(decodeAs[importResult](t, raw)), []string{"exact", "exact", "exact"})
			// CSV minting needs the owner too.
			st, _ = s.importCSV(editor, "?mint=true&concept_type=company", "text\nHooli\n")
			is.Equal(st, 403)
			st, raw = s.importCSV(editor, "?concept_type=company", "text\nHooli\nIBM\n")
			is.Equal(st, 200)
			is.Equal(rowOutcomes(decodeAs[importResult](t, raw)), []string{"would_mint", "exact"})

			// Hostile CSVs: a clear 400 naming the line, nothing written.
			var big strings.Builder
			big.WriteString("text\n")
			for i := range 10000 {
				fmt.Fprintf(&big, "company %d\n", i)
			}
			for _, c := range []struct{ name, q, body, field string }{
				{"NUL", "?mint=true&concept_type=company", "text\nA\nB\x00C\n", "line 3"},
				{"lone surrogate bytes", "?mint=true&concept_type=company", "text\nA\nB\n\"X\xed\xa0\x80\"\n", "line 4"},
				{"invalid UTF-8", "?mint=true&concept_type=company", "text\n\xff\n", "line 2"},
				{"wrong header", "?mint=true&concept_type=company", "name\nA\n", "text"},
				{"empty", "?mint=true&concept_type=company", "", "text"},
				{"header only", "?mint=true&concept_type=company", "text\n", "texts"},
				{"10,000 rows", "?mint=true&concept_type=company", big.String(), "texts"},
				{"two types", "?mint=true", "text,concept_type\nA,company\nB,city\n", "line 3"},
				{"no type", "?mint=true", "text\nA\n", "concept_type"},
				{"type disagrees", "?mint=true&concept_type=city", "text,concept_type\nA,company\n", "concept_type"},
				{"bare quote", "?mint=true&concept_type=company", "text\nA\n\"B\"x\n", "line 3"},
				{"short row", "?mint=true&concept_type=company", "note,text\nx,A\ny\n", "line 3"},
			} {
				st, raw := s.importCSV(home.key, c.q, c.body)
				e := decodeAs[struct{ Code, Field, Detail string }](t, raw)
				if st != 400 || e.Field != c.field {
					t.Errorf("%s: %d %q %q, want 400 naming %q", c.name, st, e.Field, e.Detail, c.field)
				}
			}
			is.Equal(count(home.key), 3)
			// Other media types are still refused on this route.
			st, _, _ = s.raw("POST", "/api/semantic-concepts/import", home.key, "text/plain", []byte("text\nA\n"))
			is.Equal(st, 415)
			st, _, _ = s.raw("POST", "/api/attachments/metadata", home.key, "text/csv", []byte("text\nA\n"))
			is.Equal(st, 415) // text/csv is this route's only

			// The export: filters, embeddings, aliases as JSON.
			is.Equal(s.call("POST", "/api/semantic-concepts/import", home.key, obj{"concept_type": "city", "texts": []string{"Lyon"}, "mint": true}, nil), 200)
			recs := s.exportRows(operator, "?concept_types=company&sort_by=canonical_text&include_embeddings=true")
			is.Equal(recs[0], []string{"id", "concept_type", "canonical_text", "aliases", "ref_count", "embedding_model", "dims", "created_at", "embedding"})
			is.Equal(len(recs), 4)
			is.Equal(recs[1][2], "Globex\nCorporation")
			is.Equal(recs[1][3], "[]")
			var vec []float32
			is.NoErr(json.Unmarshal([]byte(recs[1][8]), &vec))
			is.Equal(len(vec), 384)
			is.Equal(len(s.exportRows(operator, "?concept_types=city,company")), 5)
			is.Equal(len(s.exportRows(operator, "?search=glob")), 2)
			is.Equal(len(s.exportRows(other.key, "")), 1) // another organization's: none

			// The round trip: the export imports into another organization
			// as the same texts and types; again, all exact.
			st, file, _ := s.raw("GET", "/api/semantic-concepts/export?concept_types=company", home.key, "", nil)
			is.Equal(st, 200)
			st, raw = s.importCSV(other.key, "?mint=true", string(file))
			is.Equal(st, 200)
			first := decodeAs[importResult](t, raw)
			is.Equal(first.MintedCount, 3)
			st, raw = s.importCSV(other.key, "?mint=true", string(file))
			is.Equal(st, 200)
			is.Equal(rowOutcomes(decodeAs[importResult](t, raw)), []string{"exact", "exact", "exact"})
			texts := func(cred string) []string {
				var out []string
				for _, r := range s.exportRows(cred, "?concept_types=company&sort_by=canonical_text")[1:] {
					out = append(out, r[1]+"/"+r[2])
				}
				return out
			}
			is.Equal(texts(other.key), texts(home.key))
		})
	}
}

// TestConceptImportMintRoles is the authorization matrix's row for an
// import that mints (owner, with the write scope), JSON and CSV alike:
// a refused caller writes nothing.
func TestConceptImportMintRoles(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	home := s.register("home@example.com")
	readOnly := func() string {
		var out struct{ Key string }
		if st := s.call("POST", "/api/auth/api-keys", home.token, obj{"name": "ro", "role": "owner", "scopes": []string{"read"}}, &out); st != 201 {
			t.Fatalf("read-only key: %d", st)
		}
		return out.Key
	}()
	for _, c := range []struct {
		name, cred string
		want       int
	}{
		{"none", "", 401},
		{"operator", s.newKey(home.token, "operator"), 403},
		{"editor", s.newKey(home.token, "editor"), 403},
		{"read-only owner key", readOnly, 403},
		{"owner", home.key, 200},
	} {
		is.Equal(s.call("POST", "/api/semantic-concepts/import", c.cred, obj{"concept_type": "company", "texts": []string{c.name + " co"}, "mint": true}, nil), c.want) // JSON
		st, _ := s.importCSV(c.cred, "?mint=true&concept_type=company", "text\n"+c.name+" inc\n")
		is.Equal(st, c.want) // CSV
	}
	is.Equal(len(s.exportRows(home.key, "")), 1+2) // the owner's two only
}
