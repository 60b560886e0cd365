package concept_test

import (
	"errors"
	"math"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func nb(id string, sim float64) concept.Neighbor {
	return concept.Neighbor{ConceptID: id, Text: id, CanonicalText: id, IsCanonical: true, Similarity: sim}
}

func fixed(v concept.Verdict, err error) concept.Judge {
	return func(string, []concept.Neighbor) (concept.Verdict, error) { return v, err }
}

func TestResolve(t *testing.T) {
	th := concept.DefaultThresholds()
	below := math.Nextafter(concept.DefaultAccept, 0)
	belowFloor := math.Nextafter(concept.DefaultJudgeFloor, 0)
	exact := nb("c-exact", 1)
	tests := []struct {
		name       string
		in         concept.Input
		kind       concept.Kind
		id         string
		sim        float64
		candidates []string
		err        error
	}{
		{"an id in the input is kept, whatever else is found", concept.Input{InputID: "c-in", Text: "IBM", Exact: &exact,
			Neighbors: []concept.Neighbor{nb("c-1", 0.99)}}, concept.KeptInputID, "c-in", 0, nil, nil},
		{"a text that normalizes to nothing is skipped", concept.Input{Text: " (n/a) ", Neighbors: []concept.Neighbor{nb("c-1", 0.99)}},
			concept.Skipped, "", 0, nil, nil},
		{"exact hit before any neighbour", concept.Input{Text: "IBM", Exact: &exact, Neighbors: []concept.Neighbor{nb("c-1", 0.99)}},
			concept.ExactHit, "c-exact", 1, nil, nil},
		{"no neighbour mints", concept.Input{Text: "IBM"}, concept.Mint, "", 0, nil, nil},
		{"at the accept threshold reuses", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.92)}},
			concept.Match, "c-1", 0.92, nil, nil},
		{"the nearest is reused", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-2", 0.95), nb("c-1", 0.97)}},
			concept.Match, "c-1", 0.97, nil, nil},
		{"just below the accept threshold, no judge: escalated (mint and review)",
			concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", below)}}, concept.Escalated, "", below, []string{"c-1"}, nil},
		{"at the judge floor, no judge: escalated", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.80)}},
			concept.Escalated, "", 0.80, []string{"c-1"}, nil},
		{"just below the judge floor mints without review", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", belowFloor)}},
			concept.Mint, "", belowFloor, nil, nil},
		{"at the judge floor, the judge says same", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.80), nb("c-2", 0.85)},
			Judge: fixed(concept.Verdict{Decision: concept.Same, ConceptID: "c-1"}, nil)},
			concept.JudgedMatch, "c-1", 0.80, []string{"c-2", "c-1"}, nil},
		{"the judge says different: mint, candidates kept for review", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.9), nb("c-2", 0.5)},
			Judge: fixed(concept.Verdict{Decision: concept.Different}, nil)}, concept.Mint, "", 0.9, []string{"c-1"}, nil},
		{"the judge is unsure: escalated", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.9)},
			Judge: fixed(concept.Verdict{Decision: concept.Unsure}, nil)}, concept.Escalated, "", 0.9, []string{"c-1"}, nil},
		{"the judge fails: escalated with the error", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.9)},
			Judge: fixed(concept.Verdict{}, errBoom)}, concept.Escalated, "", 0.9, []string{"c-1"}, errBoom},
		{"the judge names no candidate: escalated", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.9)},
			Judge: fixed(concept.Verdict{Decision: concept.Same, ConceptID: "c-9"}, nil)}, concept.Escalated, "", 0.9, []string{"c-1"}, concept.ErrVerdict},
		{"an unknown decision: escalated", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.9)},
			Judge: fixed(concept.Verdict{Decision: "maybe"}, nil)}, concept.Escalated, "", 0.9, []string{"c-1"}, concept.ErrVerdict},
		{"no judge call above the accept threshold", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.93)},
			Judge: fixed(concept.Verdict{}, errBoom)}, concept.Match, "c-1", 0.93, nil, nil},
		{"no judge call below the floor", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", 0.5)},
			Judge: fixed(concept.Verdict{}, errBoom)}, concept.Mint, "", 0.5, nil, nil},
		{"a NaN similarity is ignored", concept.Input{Text: "IBM", Neighbors: []concept.Neighbor{nb("c-1", math.NaN())}},
			concept.Mint, "", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			if tt.in.Thresholds == (concept.Thresholds{}) {
				tt.in.Thresholds = th
			}
			out, err := concept.Resolve(tt.in)
			if tt.err == nil {
				is.NoErr(err)
			} else {
				is.True(errors.Is(err, tt.err))
			}
			is.Equal(out.Kind, tt.kind)
			is.Equal(out.ConceptID, tt.id)
			is.Equal(out.Similarity, tt.sim)
			var ids []string
			for _, c := range out.Candidates {
				ids = append(ids, c.ConceptID)
			}
			is.Equal(ids, tt.candidates)
			is.Equal(out.Matched != nil, tt.id != "" && tt.kind != concept.KeptInputID)
			is.Equal(out.Mints(), tt.kind == concept.Mint || tt.kind == concept.Escalated)
		})
	}
}

var errBoom = errors.New("boom")

func TestResolveJudgeSees(t *testing.T) {
	is := is.New(t)
	var text string
	var seen []concept.Neighbor
	judge := func(tx string, cs []concept.Neighbor) (concept.Verdict, error) {
		text, seen = tx, cs
		return concept.Verdict{Decision: concept.Same, ConceptID: "c-2", Reason: "abbreviation"}, nil
	}
	out, err := concept.Resolve(concept.Input{Text: "  I.B.M.  (US) ", Thresholds: concept.DefaultThresholds(), Judge: judge,
		Neighbors: []concept.Neighbor{nb("c-1", 0.81), nb("c-2", 0.9), {ConceptID: "c-2", AliasID: "a-x", Similarity: 0.85}, nb("c-3", 0.79)}})
	is.NoErr(err)
	is.Equal(text, "i.b.m.")               // the normalized text
	is.Equal(len(seen), 2)                 // the gray band only, one entry per concept
	is.Equal(seen[0].ConceptID, "c-2")     // nearest first
	is.Equal(seen[0].Similarity, 0.9)      // its best alias
	is.Equal(out.Reason, "abbreviation")   // kept for the review list
	is.Equal(out.Matched.ConceptID, "c-2") // the judged candidate
	is.Equal(out.NormalizedText, "i.b.m.") // reported
	is.True(!out.Review())                 // a judged match leaves nothing to review
}

func TestThresholds(t *testing.T) {
	is := is.New(t)
	d := concept.DefaultThresholds()
	is.NoErr(d.Check())
	is.Equal(d.WithAccept(nil), d)
	higher := 0.97
	is.Equal(d.WithAccept(&higher), concept.Thresholds{Accept: 0.97, JudgeFloor: 0.80})
	lower := 0.7
	is.Equal(d.WithAccept(&lower), concept.Thresholds{Accept: 0.7, JudgeFloor: 0.7}) // no gray band below the floor

	for _, bad := range []float64{0, -0.1, 1.0000001, math.NaN(), math.Inf(1)} {
		is.True(errors.Is(concept.CheckThreshold(bad), concept.ErrThreshold))
	}
	is.NoErr(concept.CheckThreshold(1))
	is.True(errors.Is(concept.Thresholds{Accept: 0.8, JudgeFloor: 0.9}.Check(), concept.ErrThreshold))

	// A per-property threshold moves the accept boundary exactly.
	p := 0.85
	out, err := concept.Resolve(concept.Input{Text: "x", Thresholds: d.WithAccept(&p), Neighbors: []concept.Neighbor{nb("c-1", 0.85)}})
	is.NoErr(err)
	is.Equal(out.Kind, concept.Match)
	out, err = concept.Resolve(concept.Input{Text: "x", Thresholds: d.WithAccept(&p), Neighbors: []concept.Neighbor{nb("c-1", math.Nextafter(0.85, 0))}})
	is.NoErr(err)
	is.Equal(out.Kind, concept.Escalated)
}

func TestNearest(t *testing.T) {
	is := is.New(t)
	got := concept.Nearest([]concept.Neighbor{
		{ConceptID: "b", Similarity: 0.9, RefCount: 1},
		{ConceptID: "a", Similarity: 0.9, RefCount: 1},
		{ConceptID: "c", Similarity: 0.9, RefCount: 5},
		{ConceptID: "a", AliasID: "a2", Similarity: 0.7},
		{ConceptID: "d", Similarity: 0.95},
	})
	var ids []string
	for _, n := range got {
		ids = append(ids, n.ConceptID)
	}
	is.Equal(ids, []string{"d", "c", "a", "b"}) // similarity, then references, then id
	is.Equal(got[2].AliasID, "")                // a's best alias kept
}

func TestOutcomeNames(t *testing.T) {
	tests := []struct {
		kind          concept.Kind
		probe         string
		report, mints string
	}{
		{concept.KeptInputID, "exact_hit", "exact", "exact"},
		{concept.ExactHit, "exact_hit", "exact", "exact"},
		{concept.Match, "match", "matched", "matched"},
		{concept.JudgedMatch, "match", "matched", "matched"},
		{concept.Escalated, "no_match", "would_mint", "minted"},
		{concept.Mint, "no_match", "would_mint", "minted"},
		{concept.Skipped, "no_match", "skipped", "skipped"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			is := is.New(t)
			is.Equal(concept.ProbeOutcome(tt.kind), tt.probe)
			is.Equal(concept.ImportOutcome(tt.kind, false), tt.report)
			is.Equal(concept.ImportOutcome(tt.kind, true), tt.mints)
		})
	}
}
