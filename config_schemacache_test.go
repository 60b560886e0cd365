package enrich_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
)

// TestSchemaCacheConfig: the schema cache is on for a minute unless
// ENRICH_SCHEMA_CACHE_TTL says otherwise; 0 turns it off.
func TestSchemaCacheConfig(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"ENRICH_SCHEMA_CACHE_TTL=5s"}, 5 * time.Second},
		{[]string{"ENRICH_SCHEMA_CACHE_TTL=0"}, 0},
	} {
		is := is.New(t)
		c, err := enrich.LoadConfig(tt.env)
		is.NoErr(err)
		is.Equal(c.SchemaCacheTTL, tt.want)
	}
	_, err := enrich.LoadConfig([]string{"ENRICH_SCHEMA_CACHE_TTL=soon"})
	is.New(t).True(err != nil)
}

// TestConceptRouteCacheConfig: the concept route cache is on for a minute
// unless ENRICH_CONCEPT_ROUTE_CACHE_TTL says otherwise; 0 turns it off.
func TestConceptRouteCacheConfig(t *testing.T) {
	for _, tt := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, time.Minute},
		{[]string{"ENRICH_CONCEPT_ROUTE_CACHE_TTL=5s"}, 5 * time.Second},
		{[]string{"ENRICH_CONCEPT_ROUTE_CACHE_TTL=0"}, 0},
	} {
		is := is.New(t)
		c, err := enrich.LoadConfig(tt.env)
		is.NoErr(err)
		is.Equal(c.ConceptRouteCacheTTL, tt.want)
	}
}
