package app

import (
	"context"
	"fmt"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/text"
)

// MaxImportTexts bounds one import (REFERENCE.md §7: 1..1000 texts).
const MaxImportTexts = 1000

// The outcomes of an import row (WIRE.md §12 ConceptImportRow).
const (
	ImportExact     = "exact"
	ImportMatched   = "matched"
	ImportWouldMint = "would_mint"
	ImportMinted    = "minted"
	ImportSkipped   = "skipped"
)

// ConceptImportRequest is a batch of identity texts to resolve in one
// concept type.
type ConceptImportRequest struct {
	ConceptType string
	Texts       []string
	// Mint writes what the ladder decides (owner); without it nothing is
	// written and the rows say what a mint would do.
	Mint bool
	// Threshold is the accept threshold (nil: concept.DefaultAccept).
	Threshold *float64
	// RowField names row i in refusals; nil names it "texts.<i>" (a CSV
	// names its line).
	RowField func(i int) string
}

// ConceptImportRow is one text's outcome; SemanticID, Similarity and
// MatchedText are nil when they do not apply.
type ConceptImportRow struct {
	Text        string
	Normalized  string
	Outcome     string
	SemanticID  *string
	Similarity  *float64
	MatchedText *string
}

// ConceptImportResult is an import's rows, in the request's order, and
// their counts per outcome.
type ConceptImportResult struct {
	ConceptType    string
	EmbeddingModel string
	Threshold      float64
	Minted         bool
	Rows           []ConceptImportRow
	Exact          int
	Matched        int
	WouldMint      int
	MintedCount    int
	Skipped        int
}

// Import resolves every text through the ladder, in order: a reporting
// import (editor) writes nothing and says what a mint would do; a minting
// one (owner) mints and aliases as enrichment does, with the import's
// origin. The whole request is checked before the first text is resolved,
// so a refused request writes nothing.
//
// Within one reporting import, a text that normalizes as an earlier
// would_mint row is reported exact, matching that row's text, without an
// id: the minting import would find the concept the earlier row minted,
// so the report's counts are the mint's.
func (s *ConceptService) Import(ctx context.Context, p *access.Principal, req ConceptImportRequest) (*ConceptImportResult, error) {
	if err := s.checkImport(p, req); err != nil {
		return nil, err
	}
	th := concept.DefaultThresholds().WithAccept(req.Threshold)
	mk, err := s.ModelFor(ctx, p.OrgID, "")
	if err != nil {
		return nil, err
	}
	out := &ConceptImportResult{ConceptType: req.ConceptType, EmbeddingModel: mk.String(), Threshold: th.Accept,
		Minted: req.Mint, Rows: make([]ConceptImportRow, 0, len(req.Texts))}
	mode := ResolveReport
	if req.Mint {
		mode = ResolveWrite
	}
	pending := map[string]string{} // normalized text -> the first would_mint row's text
	for _, t := range req.Texts {
		row := ConceptImportRow{Text: t, Normalized: concept.Normalize(t)}
		if first, ok := pending[row.Normalized]; ok && row.Normalized != "" {
			row.Outcome, row.MatchedText, row.Similarity = ImportExact, &first, rowPtr(1.0)
			out.add(row)
			continue
		}
		res, err := s.Resolve(ctx, p.OrgID, ResolveRequest{Type: req.ConceptType, EmbeddingModel: mk.String(), Text: t,
			Thresholds: th, Mode: mode, Origin: concept.OriginImport})
		if err != nil {
			return nil, err
		}
		row = importRow(t, res, req.Mint)
		if row.Outcome == ImportWouldMint {
			pending[row.Normalized] = t
		}
		out.add(row)
	}
	return out, nil
}

// checkImport refuses, before anything is resolved, a caller without the
// role, a bad type or threshold, too few or too many texts, and a text no
// store keeps (named by its row).
func (s *ConceptService) checkImport(p *access.Principal, req ConceptImportRequest) error {
	if err := access.Authorize(p, access.ActImportConcepts); err != nil {
		return err
	}
	if req.Mint {
		if err := access.Authorize(p, access.ActMintConcepts); err != nil {
			return fmt.Errorf("%w (an import that mints)", err)
		}
	}
	if err := checkText("concept_type", req.ConceptType); err != nil {
		return err
	}
	if err := concept.CheckConceptType(req.ConceptType); err != nil {
		return Invalid("concept_type", "%s", err)
	}
	if req.Threshold != nil {
		if err := concept.CheckThreshold(*req.Threshold); err != nil {
			return Invalid("threshold", "%s", err)
		}
	}
	switch n := len(req.Texts); {
	case n == 0:
		return Invalid("texts", "an import needs at least one text")
	case n > MaxImportTexts:
		return Invalid("texts", "an import takes at most %d texts, not %d", MaxImportTexts, n)
	}
	field := req.RowField
	if field == nil {
		field = func(i int) string { return fmt.Sprintf("texts.%d", i) }
	}
	for i, t := range req.Texts {
		if r, ok := text.CheckString(t); !ok {
			f := field(i)
			return Invalid(f, "%s holds %s, which is not accepted in text; nothing was imported", f, r)
		}
	}
	return nil
}

// importRow is a resolved text's row.
func importRow(t string, res Resolution, mint bool) ConceptImportRow {
	out := res.Outcome
	row := ConceptImportRow{Text: t, Normalized: out.NormalizedText, Outcome: concept.ImportOutcome(out.Kind, mint)}
	if row.Outcome == ImportSkipped {
		return row
	}
	switch {
	case res.Concept != nil:
		row.SemanticID = rowPtr(res.Concept.ID)
	case out.ConceptID != "":
		row.SemanticID = rowPtr(out.ConceptID)
	}
	if out.Matched != nil {
		row.MatchedText = rowPtr(out.Matched.Text)
	}
	if out.Similarity > 0 {
		row.Similarity = rowPtr(out.Similarity)
	}
	return row
}

// add appends row and counts it.
func (r *ConceptImportResult) add(row ConceptImportRow) {
	r.Rows = append(r.Rows, row)
	switch row.Outcome {
	case ImportExact:
		r.Exact++
	case ImportMatched:
		r.Matched++
	case ImportWouldMint:
		r.WouldMint++
	case ImportMinted:
		r.MintedCount++
	case ImportSkipped:
		r.Skipped++
	}
}

func rowPtr[T any](v T) *T { return &v }
