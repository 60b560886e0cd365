package cache

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

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
