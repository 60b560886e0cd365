package cache

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// KindSchema is the Invalidations kind of a schema's change; its id is
// "org/schema".
const KindSchema = "schema"

// KindAll is the Invalidations kind that drops every entry of every cache:
// the listener says it when it (re)connects, since it may have missed
// changes meanwhile.
const KindAll = "*"

// SchemaConfig bounds a Schemas cache.
type SchemaConfig struct {
	// TTL bounds an entry's life: the safety net for a lost notification
	// (0: nothing is kept; every read goes to the store).
	TTL time.Duration
	// MaxBytes bounds the entries' documents, each counted with
	// schemaOverhead (0: no bound).
	MaxBytes int
}

// schemaOverhead is what an entry costs besides its documents, in the
// weight that MaxBytes bounds: the struct, its strings, the cache's node.
const schemaOverhead = 1 << 10

// Schemas is ports.SchemaCache over a SchemaStore.
type Schemas struct {
	store ports.SchemaStore
	notes ports.Invalidations
	log   *slog.Logger
	clock ports.Clock
	cfg   SchemaConfig
	// c is replaced, not cleared, to drop everything: a read in flight then
	// fills the cache that nobody reads any more. Per key, otter itself
	// discards a read that an Invalidate overlapped.
	c atomic.Pointer[otter.Cache[schemaKey, *schema.Schema]]
	// dbs keeps the registrations linked to each schema (Entities), with
	// the same life and invalidations as the schemas.
	dbs atomic.Pointer[otter.Cache[schemaKey, []*dbsync.Database]]
}

type schemaKey struct{ org, id string }

var _ ports.SchemaCache = (*Schemas)(nil)

// NewSchemas caches store's schemas; notes (nil: this process is the only
// one) carries the changes to the other instances.
func NewSchemas(store ports.SchemaStore, notes ports.Invalidations, c ports.Clock, log *slog.Logger, cfg SchemaConfig) *Schemas {
	s := &Schemas{store: store, notes: notes, log: log, clock: c, cfg: cfg}
	s.reset()
	return s
}

func (s *Schemas) reset() {
	if s.cfg.TTL <= 0 {
		return
	}
	s.c.Store(expiring(s.clock, s.cfg.TTL, s.cfg.MaxBytes, func(_ schemaKey, sc *schema.Schema) uint32 {
		return uint32(len(sc.Content) + len(sc.PublishedContent) + schemaOverhead)
	}))
	s.dbs.Store(expiring(s.clock, s.cfg.TTL, s.cfg.MaxBytes, func(_ schemaKey, dbs []*dbsync.Database) uint32 {
		n := schemaOverhead
		for _, d := range dbs {
			n += schemaOverhead
			for _, l := range d.Links {
				if l.Shipped != nil {
					n += schemaOverhead * (1 + len(l.Shipped.Tables))
				}
			}
		}
		return uint32(n)
	}))
}

// GetSchema reads through the cache (ports.SchemaCache).
func (s *Schemas) GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error) {
	c := s.c.Load()
	if c == nil {
		return s.store.GetSchema(ctx, orgID, id)
	}
	sc, err := c.Get(ctx, schemaKey{orgID, id}, otter.LoaderFunc[schemaKey, *schema.Schema](func(ctx context.Context, k schemaKey) (*schema.Schema, error) {
		return s.store.GetSchema(ctx, k.org, k.id)
	}))
	if err != nil {
		return nil, err
	}
	cp := *sc
	return &cp, nil
}

// Changed drops the schema here and tells the other instances
// (ports.SchemaCache).
func (s *Schemas) Changed(ctx context.Context, orgID, id string) {
	s.drop(schemaKey{orgID, id})
	if s.notes == nil {
		return
	}
	if err := s.notes.Publish(context.WithoutCancel(ctx), KindSchema, orgID+"/"+id); err != nil && s.log != nil {
		// Other instances then start jobs on the old version until the
		// TTL ends.
		s.log.Error("publish cache invalidation", "kind", KindSchema, "org_id", orgID, "schema_id", id, "err", err)
	}
}

func (s *Schemas) drop(k schemaKey) {
	if c := s.c.Load(); c != nil {
		c.Invalidate(k)
	}
	if c := s.dbs.Load(); c != nil {
		c.Invalidate(k)
	}
}

// Entities is store with its SchemaDatabases read through this cache: an
// enrichment of a linked schema then decides its entity write without a
// storage round trip. The entries live and go with the schemas' (a
// schema's Changed, which every change of a registration or a link says
// of each schema it links, drops both, here and on the other instances).
// The end of the job re-reads the links it renders deltas for under lock,
// so a stale entry can only make the announced outcome (its gate and delta
// count) as old as the cache's TTL at worst. Nil store: nil.
func (s *Schemas) Entities(store ports.EntityStore) ports.EntityStore {
	if store == nil {
		return nil
	}
	return &cachedEntities{EntityStore: store, s: s}
}

type cachedEntities struct {
	ports.EntityStore
	s *Schemas
}

// SchemaDatabases reads through the cache; the registrations are shared
// and must not be changed (the slice is the caller's).
func (c *cachedEntities) SchemaDatabases(ctx context.Context, orgID, schemaID string) ([]*dbsync.Database, error) {
	cc := c.s.dbs.Load()
	if cc == nil {
		return c.EntityStore.SchemaDatabases(ctx, orgID, schemaID)
	}
	dbs, err := cc.Get(ctx, schemaKey{orgID, schemaID}, otter.LoaderFunc[schemaKey, []*dbsync.Database](
		func(ctx context.Context, k schemaKey) ([]*dbsync.Database, error) {
			return c.EntityStore.SchemaDatabases(ctx, k.org, k.id)
		}))
	if err != nil {
		return nil, err
	}
	return append([]*dbsync.Database(nil), dbs...), nil
}

// Forget applies another instance's change: a schema (kind "schema", id
// "org/schema"), or everything (kind "*", or an id it cannot read). Other
// kinds are not this cache's.
func (s *Schemas) Forget(kind, id string) {
	switch kind {
	case KindAll:
		s.reset()
	case KindSchema:
		if org, sid, ok := strings.Cut(id, "/"); ok {
			s.drop(schemaKey{org, sid})
		} else {
			s.reset()
		}
	}
}
