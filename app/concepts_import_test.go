package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

// twinEmbedder embeds with the n-gram embedder, except that the texts of
// twins take the vector of their twin (a match at similarity 1).
type twinEmbedder struct{ twins map[string]string }

func (e twinEmbedder) Embed(_ context.Context, req ports.EmbedRequest) (ports.EmbedResponse, error) {
	var out ports.EmbedResponse
	for _, t := range req.Texts {
		if tw, ok := e.twins[t]; ok {
			t = tw
		}
		out.Vectors = append(out.Vectors, concept.NgramEmbed(t, concept.NgramDims))
		out.InputTokens++
	}
	return out, nil
}

func importService(t *testing.T) (*app.ConceptService, *memory.ConceptStore, *memory.SchemaStore) {
	t.Helper()
	st := memory.NewConceptStore()
	schemas := memory.NewSchemaStore()
	def, err := model.ParseKey("builtin::ngram-384")
	if err != nil {
		t.Fatal(err)
	}
	return &app.ConceptService{Store: st, Vectors: st, Schemas: schemas, Embedder: twinEmbedder{twins: map[string]string{"ibm corp": "ibm"}},
		DefaultModel: def, Clock: fakeports.NewClock(), IDs: system.IDs{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, schemas
}

func caller(org string, role access.Role) *access.Principal {
	return &access.Principal{OrgID: org, UserID: "u", Role: role, Scopes: access.DefaultScopes()}
}

func countConcepts(t *testing.T, st ports.ConceptStore, org string) int {
	t.Helper()
	_, n, err := st.ListConcepts(context.Background(), org, ports.ConceptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func outcomes(r *app.ConceptImportResult) []string {
	var out []string
	for _, row := range r.Rows {
		out = append(out, row.Outcome)
	}
	return out
}

// TestConceptImport: a report writes nothing and counts as the mint would
// (a later duplicate is exact); the mint needs the owner and then the
// same texts are exact; blank texts are skipped; a near twin matches.
func TestConceptImport(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	svc, st, _ := importService(t)
	texts := []string{"IBM", "  ", "Acme Corp", "ibm", "IBM Corp"}

	rep, err := svc.Import(ctx, caller("o1", access.Editor), app.ConceptImportRequest{ConceptType: "company", Texts: texts})
	is.NoErr(err)
	is.Equal(outcomes(rep), []string{"would_mint", "skipped", "would_mint", "exact", "would_mint"})
	is.Equal(rep.WouldMint, 2+1)
	is.Equal(rep.Exact, 1)
	is.Equal(rep.Skipped, 1)
	is.Equal(*rep.Rows[3].MatchedText, "IBM") // the earlier row it duplicates
	is.True(rep.Rows[3].SemanticID == nil)    // nothing minted
	is.Equal(rep.Threshold, 0.92)
	is.Equal(rep.EmbeddingModel, "builtin::ngram-384")
	is.Equal(countConcepts(t, st, "o1"), 0) // a report writes nothing

	// Minting needs the owner; an editor is refused before anything is
	// written.
	_, err = svc.Import(ctx, caller("o1", access.Editor), app.ConceptImportRequest{ConceptType: "company", Texts: texts, Mint: true})
	is.True(errors.Is(err, access.ErrForbidden))
	is.Equal(countConcepts(t, st, "o1"), 0)
	_, err = svc.Import(ctx, caller("o1", access.Operator), app.ConceptImportRequest{ConceptType: "company", Texts: texts})
	is.True(errors.Is(err, access.ErrForbidden))

	mint, err := svc.Import(ctx, caller("o1", access.Owner), app.ConceptImportRequest{ConceptType: "company", Texts: texts, Mint: true})
	is.NoErr(err)
	// "ibm" is the concept "IBM" minted a row earlier; "IBM Corp" embeds as
	// "ibm" does, so it matches (and becomes an alias).
	is.Equal(outcomes(mint), []string{"minted", "skipped", "minted", "exact", "matched"})
	is.Equal(*mint.Rows[3].SemanticID, *mint.Rows[0].SemanticID)
	is.Equal(*mint.Rows[4].SemanticID, *mint.Rows[0].SemanticID)
	is.Equal(*mint.Rows[4].MatchedText, "IBM")
	is.Equal(mint.MintedCount, 2)
	is.Equal(countConcepts(t, st, "o1"), 2)
	c, err := st.GetConcept(ctx, "o1", *mint.Rows[0].SemanticID)
	is.NoErr(err)
	is.Equal(len(c.Aliases), 2)
	is.Equal(c.Aliases[1].Origin, concept.OriginImport)

	again, err := svc.Import(ctx, caller("o1", access.Owner), app.ConceptImportRequest{ConceptType: "company", Texts: texts, Mint: true})
	is.NoErr(err)
	is.Equal(outcomes(again), []string{"exact", "skipped", "exact", "exact", "exact"})
	is.Equal(countConcepts(t, st, "o1"), 2)
	// Another organization sees none of it.
	other, err := svc.Import(ctx, caller("o2", access.Editor), app.ConceptImportRequest{ConceptType: "company", Texts: []string{"IBM"}})
	is.NoErr(err)
	is.Equal(outcomes(other), []string{"would_mint"})
}

// TestConceptImportRefusals: a bad row refuses the whole request, naming
// it, and nothing is written even when earlier rows were fine.
func TestConceptImportRefusals(t *testing.T) {
	ctx := context.Background()
	many := make([]string, app.MaxImportTexts+1)
	for i := range many {
		many[i] = "t"
	}
	th := 1.5
	for _, tt := range []struct {
		name  string
		req   app.ConceptImportRequest
		field string
	}{
		{"nul", app.ConceptImportRequest{ConceptType: "company", Texts: []string{"ok", "a\x00b"}}, "texts.1"},
		{"lone surrogate", app.ConceptImportRequest{ConceptType: "company", Texts: []string{"ok", "x", "\xed\xa0\x80"}}, "texts.2"},
		{"csv line", app.ConceptImportRequest{ConceptType: "company", Texts: []string{"\xff"},
			RowField: func(i int) string { return "line 2" }}, "line 2"},
		{"none", app.ConceptImportRequest{ConceptType: "company"}, "texts"},
		{"too many", app.ConceptImportRequest{ConceptType: "company", Texts: many}, "texts"},
		{"no type", app.ConceptImportRequest{Texts: []string{"a"}}, "concept_type"},
		{"threshold", app.ConceptImportRequest{ConceptType: "company", Texts: []string{"a"}, Threshold: &th}, "threshold"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			svc, st, _ := importService(t)
			tt.req.Mint = true
			_, err := svc.Import(ctx, caller("o1", access.Owner), tt.req)
			e, ok := app.AsError(err)
			is.True(ok)
			is.True(errors.Is(err, ports.ErrInvalid))
			is.Equal(e.Field, tt.field)
			is.Equal(countConcepts(t, st, "o1"), 0)
		})
	}
}

// TestConceptExport: pages through every concept (more than a page), the
// filters, a schema's types and the embeddings.
func TestConceptExport(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	svc, _, schemas := importService(t)
	owner := caller("o1", access.Owner)
	var texts []string
	for i := range 450 {
		texts = append(texts, "company "+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	res, err := svc.Import(ctx, owner, app.ConceptImportRequest{ConceptType: "company", Texts: texts, Mint: true, Threshold: rowPtr(1.0)})
	is.NoErr(err)
	is.True(res.MintedCount > 200) // more than a page
	_, err = svc.Import(ctx, owner, app.ConceptImportRequest{ConceptType: "city", Texts: []string{"Lyon", "Paris"}, Mint: true})
	is.NoErr(err)

	read := func(req app.ConceptExportRequest) []app.ConceptExportRow {
		t.Helper()
		e, err := svc.Export(ctx, caller("o1", access.Operator), req)
		is.NoErr(err)
		var all []app.ConceptExportRow
		for {
			rows, err := e.Next(ctx)
			is.NoErr(err)
			if len(rows) == 0 {
				return all
			}
			all = append(all, rows...)
		}
	}
	is.Equal(len(read(app.ConceptExportRequest{})), res.MintedCount+2)
	cities := read(app.ConceptExportRequest{Types: []string{"city"}, SortBy: "canonical_text", SortOrder: "desc", IncludeEmbeddings: true})
	is.Equal(len(cities), 2)
	is.Equal(cities[0].Concept.CanonicalText, "Paris")
	is.Equal(len(cities[0].Embedding), concept.NgramDims)

	// A schema's semantic_id properties name the types.
	doc := `{"type":"object","properties":{"name":{"type":"string","identifying":true},
		"id":{"type":"string","semantic_id":true,"semantic_concept_type":"city"}}}`
	is.NoErr(schemas.CreateSchema(ctx, &schema.Schema{ID: "s1", OrgID: "o1", Name: "Cities", Content: []byte(doc)}))
	is.Equal(len(read(app.ConceptExportRequest{SavedSchemaID: "s1"})), 2)
	is.Equal(len(read(app.ConceptExportRequest{SavedSchemaID: "s1", Types: []string{"company"}})), 0)
	_, err = svc.Export(ctx, caller("o2", access.Operator), app.ConceptExportRequest{SavedSchemaID: "s1"})
	is.True(errors.Is(err, ports.ErrNotFound)) // another organization's schema
	_, err = svc.Export(ctx, caller("o1", access.Operator), app.ConceptExportRequest{SortBy: "nope"})
	is.True(errors.Is(err, ports.ErrInvalid))
	_, err = svc.Export(ctx, nil, app.ConceptExportRequest{})
	is.True(err != nil)
}

func rowPtr[T any](v T) *T { return &v }
