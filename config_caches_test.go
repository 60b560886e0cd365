package enrich

import (
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestCacheLimits: a zero Config (an embedder's, or the environment's,
// which sets none of them) gets every cache bound from DefaultCaches; a
// bound the embedder set is kept.
func TestCacheLimits(t *testing.T) {
	d := DefaultCaches()
	for _, tt := range []struct {
		name string
		set  CacheLimits
		want CacheLimits
	}{
		{"none set", CacheLimits{}, d},
		{"some set", CacheLimits{Shapes: 5, KeyCandidatesTTL: time.Second},
			CacheLimits{SchemaBytes: d.SchemaBytes, AuthEntries: d.AuthEntries, Validators: d.Validators, Shapes: 5,
				KeyCandidatesTTL: time.Second, KeyCandidateGroups: d.KeyCandidateGroups, Clients: d.Clients, QuotaCounts: d.QuotaCounts,
				ConceptRoutes: d.ConceptRoutes}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, err := LoadConfig(nil)
			is.NoErr(err)
			c.Caches = tt.set
			c, _, err = c.withDefaults()
			is.NoErr(err)
			is.Equal(c.Caches, tt.want)
		})
	}
	is := is.New(t)
	is.True(d.SchemaBytes > 0 && d.AuthEntries > 0 && d.Validators > 0 && d.Shapes > 0 && d.KeyCandidateGroups > 0 && d.Clients > 0 && d.QuotaCounts > 0 && d.ConceptRoutes > 0)
	is.True(d.KeyCandidatesTTL > 0)
}
