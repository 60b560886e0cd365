package concept_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func ibm() concept.Concept {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return concept.Concept{ID: "c-1", Type: "company", CanonicalText: "IBM", NormalizedText: "ibm", EmbeddingModel: "builtin::ngram-384", Dims: 384,
		Aliases: []concept.Alias{
			{ID: "a-1", Text: "IBM", NormalizedText: "ibm", IsCanonical: true, CreatedAt: t0},
			{ID: "a-3", Text: "I.B.M.", NormalizedText: "i.b.m.", CreatedAt: t0.Add(2 * time.Hour)},
			{ID: "a-2", Text: "International Business Machines Corp.", NormalizedText: "international business machines corp.", CreatedAt: t0.Add(time.Hour)},
		}}
}

func TestAliases(t *testing.T) {
	is := is.New(t)
	c := ibm()
	is.Equal(c.Slice(), concept.Slice{Type: "company", EmbeddingModel: "builtin::ngram-384"})
	a, ok := c.Canonical()
	is.True(ok)
	is.Equal(a.ID, "a-1")
	a, ok = c.AliasByText("i.b.m.")
	is.True(ok)
	is.Equal(a.ID, "a-3")
	_, ok = c.AliasByText("apple")
	is.True(!ok)

	p, err := concept.PromoteAlias(c, "a-2")
	is.NoErr(err)
	is.Equal(p.CanonicalText, "International Business Machines Corp.")
	is.Equal(p.NormalizedText, "international business machines corp.")
	is.Equal([]bool{p.Aliases[0].IsCanonical, p.Aliases[1].IsCanonical, p.Aliases[2].IsCanonical}, []bool{false, false, true})
	is.True(c.Aliases[0].IsCanonical) // the input is not changed

	r, err := concept.RemoveAlias(c, "a-1") // the canonical one: the oldest left takes over
	is.NoErr(err)
	is.Equal(len(r.Aliases), 2)
	is.Equal(r.CanonicalText, "International Business Machines Corp.")
	is.Equal(len(c.Aliases), 3)

	r, err = concept.RemoveAlias(c, "a-3")
	is.NoErr(err)
	is.Equal(r.CanonicalText, "IBM")

	_, err = concept.RemoveAlias(c, "a-9")
	is.True(errors.Is(err, concept.ErrAliasNotFound))
	_, err = concept.PromoteAlias(c, "a-9")
	is.True(errors.Is(err, concept.ErrAliasNotFound))

	one := c
	one.Aliases = c.Aliases[:1]
	_, err = concept.RemoveAlias(one, "a-1")
	is.True(errors.Is(err, concept.ErrLastAlias)) // never the last one
}
