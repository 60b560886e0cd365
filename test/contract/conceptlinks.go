package contract

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

// RunConceptLinks checks the links between records and concepts: the
// upsert by (record, path), the newest-first listing, the use counts with
// their schemas, repointing, deletion, and the organization scope.
func RunConceptLinks(t *testing.T, newLinks func(t *testing.T) ports.ConceptLinks) {
	ctx := context.Background()
	is := is.New(t)
	s := newLinks(t)
	org, other := newID("org"), newID("org")
	a, b, c := TestUUID(), TestUUID(), TestUUID()
	r1, r2, r3 := TestUUID(), TestUUID(), TestUUID()
	cos := 0.95
	is.NoErr(s.AddLinks(ctx, []ports.ConceptLink{
		{OrgID: org, ConceptID: a, AliasID: "al1", RecordID: r1, SchemaID: "s1", JSONPath: "$.id", CreatedAt: at(1)},
		{OrgID: org, ConceptID: a, RecordID: r2, SchemaID: "s2", JSONPath: "$.id", Cosine: &cos, CreatedAt: at(2)},
		{OrgID: org, ConceptID: b, RecordID: r2, SchemaID: "s2", JSONPath: "$.offices[0].id", CreatedAt: at(3)},
		{OrgID: other, ConceptID: c, RecordID: r3, SchemaID: "s9", JSONPath: "$.id", CreatedAt: at(4)},
	}))
	is.NoErr(s.AddLinks(ctx, nil))

	links, err := s.LinksOf(ctx, org, a, 10)
	is.NoErr(err)
	is.Equal(len(links), 2)
	is.Equal(links[0].RecordID, r2) // newest first
	is.True(links[0].Cosine != nil && *links[0].Cosine == 0.95)
	is.Equal(links[1].RecordID, r1)
	is.True(links[1].Cosine == nil)
	is.Equal(links[1].AliasID, "al1")
	is.Equal(links[1].SchemaID, "s1")
	is.Equal(links[1].JSONPath, "$.id")
	sameTime(t, "created_at", links[1].CreatedAt, at(1))
	links, err = s.LinksOf(ctx, org, a, 1)
	is.NoErr(err)
	is.Equal(len(links), 1)
	links, err = s.LinksOf(ctx, other, a, 10)
	is.NoErr(err)
	is.Equal(len(links), 0) // another organization's

	use, err := s.UseOf(ctx, org, []string{a, b})
	is.NoErr(err)
	is.Equal(use.RecordLinks, 3)
	is.Equal(use.SchemaIDs, []string{"s1", "s2"})
	use, err = s.UseOf(ctx, org, []string{c, "nul\x00"})
	is.NoErr(err)
	is.Equal(use.RecordLinks, 0)

	// The same (record, path) again replaces the link.
	is.NoErr(s.AddLinks(ctx, []ports.ConceptLink{{OrgID: org, ConceptID: b, RecordID: r1, SchemaID: "s1", JSONPath: "$.id", CreatedAt: at(5)}}))
	links, err = s.LinksOf(ctx, org, a, 10)
	is.NoErr(err)
	is.Equal(len(links), 1)
	links, err = s.LinksOf(ctx, org, b, 10)
	is.NoErr(err)
	is.Equal(len(links), 2)
	is.Equal(links[0].RecordID, r1)

	n, err := s.RepointLinks(ctx, org, b, a)
	is.NoErr(err)
	is.Equal(n, 2)
	n, err = s.RepointLinks(ctx, other, a, b) // another organization's: none
	is.NoErr(err)
	is.Equal(n, 0)
	links, err = s.LinksOf(ctx, org, a, 10)
	is.NoErr(err)
	is.Equal(len(links), 3)

	n, err = s.DeleteLinks(ctx, other, []string{a})
	is.NoErr(err)
	is.Equal(n, 0)
	n, err = s.DeleteLinks(ctx, org, []string{a, "nul\x00"})
	is.NoErr(err)
	is.Equal(n, 3)
	use, err = s.UseOf(ctx, other, []string{c})
	is.NoErr(err)
	is.Equal(use.RecordLinks, 1)
}
