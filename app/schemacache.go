package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// SchemaCache keeps recently read saved schemas (by organization and id) so
// that starting a job needs no storage round trip for its schema. Only job
// starts read through it (the plan of an enrichment, a batch, a fusion or
// a sample job); the schema endpoints read the store, so the API always
// shows the truth. Entries live for TTL at most; every write of a schema
// through the app drops its entry here at once and, through Invalidations,
// on other instances. A nil *SchemaCache, or a TTL of 0, caches nothing.
type SchemaCache struct {
	// TTL bounds an entry's life: the safety net for a lost notification
	// (0: no cache).
	TTL time.Duration
	// Invalidations spreads drops to other instances (nil: this process is
	// the only one).
	Invalidations ports.Invalidations
	Clock         ports.Clock
	Log           *slog.Logger

	mu    sync.RWMutex
	m     map[schemaKey]cachedSchema
	bytes int
	// gen counts drops: a read that a drop overlapped is not kept, since
	// it may have returned the version before the write.
	gen uint64
}

type schemaKey struct{ org, id string }

type cachedSchema struct {
	sc schema.Schema
	at time.Time
}

// The cache starts over when it reaches either bound.
const (
	maxCachedSchemas     = 10_000
	maxCachedSchemaBytes = 64 << 20
)

// InvalidationKindSchema is the kind of a schema's invalidation; its id is
// schemaInvalidationID's.
const InvalidationKindSchema = "schema"

func schemaInvalidationID(orgID, id string) string { return orgID + "/" + id }

func (c *SchemaCache) enabled() bool { return c != nil && c.TTL > 0 }

// live is liveSchema through the cache: one of the organization's schemas
// that is not in the trash. The caller gets its own copy of the struct (its
// documents are shared and must not be changed in place).
func (c *SchemaCache) live(ctx context.Context, store ports.SchemaStore, orgID, id string) (*schema.Schema, error) {
	if !c.enabled() {
		return liveSchema(ctx, store, orgID, id)
	}
	k := schemaKey{orgID, id}
	now := c.Clock.Now()
	c.mu.RLock()
	e, ok := c.m[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Sub(e.at) <= c.TTL {
		cp := e.sc
		return notTrashed(&cp)
	}
	sc, err := storedSchema(ctx, store, orgID, id)
	if err != nil {
		return nil, err
	}
	c.put(k, sc, now, gen) // keeps a copy: sc stays the caller's
	return notTrashed(sc)
}

// put keeps sc unless a drop happened since gen was read.
func (c *SchemaCache) put(k schemaKey, sc *schema.Schema, now time.Time, gen uint64) {
	size := len(sc.Content) + len(sc.PublishedContent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil || len(c.m) >= maxCachedSchemas || c.bytes+size > maxCachedSchemaBytes {
		c.m, c.bytes = map[schemaKey]cachedSchema{}, 0
	}
	if old, ok := c.m[k]; ok {
		c.bytes -= len(old.sc.Content) + len(old.sc.PublishedContent)
	}
	c.m[k] = cachedSchema{sc: *sc, at: now}
	c.bytes += size
}

// drop forgets one schema, or every schema when all.
func (c *SchemaCache) drop(k schemaKey, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if all {
		c.m, c.bytes = nil, 0
		return
	}
	if old, ok := c.m[k]; ok {
		c.bytes -= len(old.sc.Content) + len(old.sc.PublishedContent)
		delete(c.m, k)
	}
}

// written is called after every successful write of schema orgID/id
// through the app (after the commit of a unit of work): it drops the entry
// here before the write's response and tells the other instances.
func (c *SchemaCache) written(ctx context.Context, orgID, id string) {
	if c == nil {
		return
	}
	c.drop(schemaKey{orgID, id}, false)
	if c.Invalidations == nil {
		return
	}
	if err := c.Invalidations.Publish(context.WithoutCancel(ctx), InvalidationKindSchema, schemaInvalidationID(orgID, id)); err != nil {
		// Other instances then start jobs on the old version until the
		// TTL ends.
		if c.Log != nil {
			c.Log.Error("publish cache invalidation", "kind", InvalidationKindSchema, "org_id", orgID, "schema_id", id, "err", err)
		}
	}
}

// Forget drops a cached schema (kind "schema", id "org/schema") or every
// schema (kind "*", or an id it cannot read); the listener of other
// instances' changes calls it. Other kinds are not the cache's.
func (c *SchemaCache) Forget(kind, id string) {
	if c == nil {
		return
	}
	switch kind {
	case "*":
		c.drop(schemaKey{}, true)
	case InvalidationKindSchema:
		org, sid, ok := strings.Cut(id, "/")
		c.drop(schemaKey{org, sid}, !ok)
	}
}
