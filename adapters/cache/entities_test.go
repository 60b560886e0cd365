package cache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// registrations is an EntityStore whose SchemaDatabases counts its reads
// and answers one registration named after the read.
type registrations struct {
	ports.EntityStore
	reads atomic.Int32
}

func (r *registrations) SchemaDatabases(_ context.Context, orgID, schemaID string) ([]*dbsync.Database, error) {
	n := r.reads.Add(1)
	return []*dbsync.Database{{ID: string(rune('a' + n - 1)), OrgID: orgID, Links: []dbsync.Link{{SchemaID: schemaID}}}}, nil
}

// TestSchemaDatabasesCache: a schema's registrations are read once, then
// served until the schema changes here or elsewhere, or everything is
// forgotten; with no TTL every read goes to the store.
func TestSchemaDatabasesCache(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(c *cache.Schemas)
		reread bool
	}{
		{"nothing changed", func(*cache.Schemas) {}, false},
		{"changed here", func(c *cache.Schemas) { c.Changed(context.Background(), "o", "s") }, true},
		{"another schema changed", func(c *cache.Schemas) { c.Changed(context.Background(), "o", "t") }, false},
		{"forget the schema", func(c *cache.Schemas) { c.Forget("schema", "o/s") }, true},
		{"forget everything", func(c *cache.Schemas) { c.Forget("*", "") }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, _, _, _ := newSchemas(t, time.Hour)
			store := &registrations{}
			es := c.Entities(store)
			ctx := context.Background()
			first, err := es.SchemaDatabases(ctx, "o", "s")
			is.NoErr(err)
			is.Equal(first[0].ID, "a")
			tt.change(c)
			again, err := es.SchemaDatabases(ctx, "o", "s")
			is.NoErr(err)
			want := map[bool]string{false: "a", true: "b"}[tt.reread]
			is.Equal(again[0].ID, want)
		})
	}
	is := is.New(t)
	c, _, _, _ := newSchemas(t, 0)
	store := &registrations{}
	es := c.Entities(store)
	for range 3 {
		_, err := es.SchemaDatabases(context.Background(), "o", "s")
		is.NoErr(err)
	}
	is.Equal(store.reads.Load(), int32(3))
	is.True(c.Entities(nil) == nil)
}
