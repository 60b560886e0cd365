package concept_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func TestMerge(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	winner := concept.Concept{ID: "w", Type: "company", CanonicalText: "IBM", NormalizedText: "ibm", RefCount: 2,
		Aliases: []concept.Alias{{ID: "wa", Text: "IBM", NormalizedText: "ibm", IsCanonical: true, CreatedAt: at}}}
	loser := concept.Concept{ID: "l", Type: "company", CanonicalText: "Intl Business Machines", NormalizedText: "intl business machines", RefCount: 3,
		Aliases: []concept.Alias{
			{ID: "la", Text: "Intl Business Machines", NormalizedText: "intl business machines", IsCanonical: true, Origin: concept.OriginManual, RefCount: 3},
			{ID: "lb", Text: "ibm", NormalizedText: "ibm", Origin: concept.OriginImport}}}
	tests := []struct {
		name          string
		winner, loser concept.Concept
		err           error
		moved         []string
		refs          int
	}{
		{name: "moves and drops held texts", winner: winner, loser: loser, moved: []string{"la"}, refs: 5},
		{name: "self", winner: winner, loser: winner, err: concept.ErrMergeSelf},
		{name: "types", winner: winner, loser: func() concept.Concept { l := loser; l.Type = "publisher"; return l }(), err: concept.ErrMergeTypes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, moved, err := concept.Merge(tt.winner, tt.loser)
			is.Equal(err, tt.err)
			if err != nil {
				return
			}
			ids := []string{}
			for _, a := range moved {
				ids = append(ids, a.ID)
				is.True(!a.IsCanonical)
				is.Equal(a.Origin, concept.OriginMerge)
			}
			is.Equal(ids, tt.moved)
			is.Equal(got.RefCount, tt.refs)
			is.Equal(got.CanonicalText, "IBM")
			c, _ := got.Canonical()
			is.Equal(c.ID, "wa")
			is.Equal(len(got.Aliases), 1+len(tt.moved))
			is.Equal(len(winner.Aliases), 1) // the input is not changed
		})
	}
}
