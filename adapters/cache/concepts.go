package cache

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/entityenrich/enrich/ports"
)

// KindConceptRoute is the Invalidations kind of a change of what routes an
// organization's concept lookups to an embedding model: its setting or
// one of its migrations. Its id is the organization.
const KindConceptRoute = "concept_route"

// ConceptRouteConfig bounds a ConceptRoutes cache.
type ConceptRouteConfig struct {
	// TTL bounds an entry's life (0: nothing is kept; every read goes to
	// the stores).
	TTL time.Duration
	// MaxEntries bounds the organizations kept (0: no bound).
	MaxEntries int
}

// ConceptRoutes keeps, per organization, the two reads that pick the
// embedding model of every concept lookup (the embedding-model setting and
// the latest migration), so that a lookup needs no storage round trip
// for them. It wraps both stores: a write through it drops the
// organization's entry here before it returns and on the other instances
// through Invalidations. A migration's cut-over is such a write; an
// instance that hears of it late resolves as one that read the route just
// before it, and the migration's sweep moves what it mints meanwhile.
type ConceptRoutes struct {
	settings   ports.EmbeddingSettings
	migrations ports.ConceptMigrations
	notes      ports.Invalidations
	log        *slog.Logger
	clock      ports.Clock
	cfg        ConceptRouteConfig
	// Replaced, not cleared, to drop everything (see Schemas.c).
	c atomic.Pointer[otter.Cache[string, conceptRoute]]
}

// conceptRoute is an organization's entry: its setting (set false: never
// set) and its latest migration (nil: none ever ran).
type conceptRoute struct {
	model  string
	set    bool
	latest *ports.ConceptMigration
}

// NewConceptRoutes caches what the stores say of the organizations'
// routes; notes (nil: this process is the only one) carries the changes
// to the other instances.
func NewConceptRoutes(settings ports.EmbeddingSettings, migrations ports.ConceptMigrations, notes ports.Invalidations, c ports.Clock,
	log *slog.Logger, cfg ConceptRouteConfig) *ConceptRoutes {
	r := &ConceptRoutes{settings: settings, migrations: migrations, notes: notes, log: log, clock: c, cfg: cfg}
	r.reset()
	return r
}

func (r *ConceptRoutes) reset() {
	if r.cfg.TTL <= 0 || r.settings == nil || r.migrations == nil {
		return
	}
	r.c.Store(expiring[string, conceptRoute](r.clock, r.cfg.TTL, r.cfg.MaxEntries, nil))
}

// Settings is the settings store read through the cache; its writes drop
// the organization's entry.
func (r *ConceptRoutes) Settings() ports.EmbeddingSettings {
	if r.settings == nil {
		return nil
	}
	return conceptSettings{r}
}

// Migrations is the migrations store with LatestMigration read through the
// cache; its writes drop the organization's entry.
func (r *ConceptRoutes) Migrations() ports.ConceptMigrations {
	if r.migrations == nil {
		return nil
	}
	return conceptMigrations{ConceptMigrations: r.migrations, r: r}
}

// route returns orgID's entry, reading both stores on a miss.
func (r *ConceptRoutes) route(ctx context.Context, orgID string) (conceptRoute, bool, error) {
	c := r.c.Load()
	if c == nil {
		return conceptRoute{}, false, nil
	}
	e, err := c.Get(ctx, orgID, otter.LoaderFunc[string, conceptRoute](func(ctx context.Context, orgID string) (conceptRoute, error) {
		var e conceptRoute
		var err error
		if e.model, e.set, err = r.settings.EmbeddingModel(ctx, orgID); err != nil {
			return e, err
		}
		e.latest, err = r.migrations.LatestMigration(ctx, orgID)
		if errors.Is(err, ports.ErrNotFound) {
			err = nil
		}
		return e, err
	}))
	return e, err == nil, err
}

// Changed drops orgID's entry here and tells the other instances.
func (r *ConceptRoutes) Changed(ctx context.Context, orgID string) {
	if c := r.c.Load(); c != nil {
		c.Invalidate(orgID)
	}
	if r.notes == nil {
		return
	}
	if err := r.notes.Publish(context.WithoutCancel(ctx), KindConceptRoute, orgID); err != nil && r.log != nil {
		// Other instances then route lookups the old way until the TTL
		// ends.
		r.log.Error("publish cache invalidation", "kind", KindConceptRoute, "org_id", orgID, "err", err)
	}
}

// Forget applies another instance's change: an organization's route (kind
// "concept_route"), or everything (kind "*"). Other kinds are not this
// cache's.
func (r *ConceptRoutes) Forget(kind, id string) {
	switch kind {
	case KindAll:
		r.reset()
	case KindConceptRoute:
		if c := r.c.Load(); c != nil {
			c.Invalidate(id)
		}
	}
}

type conceptSettings struct{ r *ConceptRoutes }

func (s conceptSettings) EmbeddingModel(ctx context.Context, orgID string) (string, bool, error) {
	e, ok, err := s.r.route(ctx, orgID)
	if !ok && err == nil {
		return s.r.settings.EmbeddingModel(ctx, orgID)
	}
	return e.model, e.set, err
}

func (s conceptSettings) SetEmbeddingModel(ctx context.Context, orgID, model string) error {
	defer s.r.Changed(ctx, orgID)
	return s.r.settings.SetEmbeddingModel(ctx, orgID, model)
}

type conceptMigrations struct {
	ports.ConceptMigrations
	r *ConceptRoutes
}

// LatestMigration reads through the cache; the caller gets its own copy.
func (m conceptMigrations) LatestMigration(ctx context.Context, orgID string) (*ports.ConceptMigration, error) {
	e, ok, err := m.r.route(ctx, orgID)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return m.ConceptMigrations.LatestMigration(ctx, orgID)
	case e.latest == nil:
		return nil, ports.ErrNotFound
	}
	cp := *e.latest
	cp.ConceptTypes, cp.CutTypes = slices.Clone(cp.ConceptTypes), slices.Clone(cp.CutTypes)
	return &cp, nil
}

func (m conceptMigrations) StartMigration(ctx context.Context, cm ports.ConceptMigration) error {
	defer m.r.Changed(ctx, cm.OrgID)
	return m.ConceptMigrations.StartMigration(ctx, cm)
}

func (m conceptMigrations) SaveMigration(ctx context.Context, cm ports.ConceptMigration) error {
	defer m.r.Changed(ctx, cm.OrgID)
	return m.ConceptMigrations.SaveMigration(ctx, cm)
}
