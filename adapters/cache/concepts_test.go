package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

// routeStores are the memory settings and migrations, counting reads.
type routeStores struct {
	*memory.EmbeddingSettings
	migrations     *memory.ConceptMigrations
	settingReads   atomic.Int32
	migrationReads atomic.Int32
}

func (s *routeStores) EmbeddingModel(ctx context.Context, org string) (string, bool, error) {
	s.settingReads.Add(1)
	return s.EmbeddingSettings.EmbeddingModel(ctx, org)
}

type countedMigrations struct {
	*memory.ConceptMigrations
	s *routeStores
}

func (m countedMigrations) LatestMigration(ctx context.Context, org string) (*ports.ConceptMigration, error) {
	m.s.migrationReads.Add(1)
	return m.ConceptMigrations.LatestMigration(ctx, org)
}

func newRoutes(t *testing.T, ttl time.Duration) (*cache.ConceptRoutes, *routeStores, *fakeports.Clock, *fakeports.Notes) {
	t.Helper()
	s := &routeStores{EmbeddingSettings: memory.NewEmbeddingSettings(), migrations: memory.NewConceptMigrations()}
	clock, n := fakeports.NewClock(), &fakeports.Notes{}
	c := cache.NewConceptRoutes(s, countedMigrations{s.migrations, s}, n, clock, nil, cache.ConceptRouteConfig{TTL: ttl, MaxEntries: 16})
	return c, s, clock, n
}

func running(org string) ports.ConceptMigration {
	return ports.ConceptMigration{ID: "m1", OrgID: org, SourceModel: "builtin::ngram-384", TargetModel: "openai::e",
		ConceptTypes: []string{"company", "person"}, StartedAt: time.Unix(1, 0)}
}

// TestConceptRoutesExpiry: an organization's setting and latest migration
// (none, too) are read once per TTL by the Clock port; no TTL reads the
// stores every time.
func TestConceptRoutesExpiry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ttl     time.Duration
		advance time.Duration
		reads   int32
	}{
		{"fresh", time.Minute, 0, 1},
		{"just before the ttl", time.Minute, time.Minute - time.Nanosecond, 1},
		{"at the ttl", time.Minute, time.Minute, 2},
		{"no ttl", 0, 0, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, s, clock, _ := newRoutes(t, tt.ttl)
			ctx := context.Background()
			is.NoErr(s.SetEmbeddingModel(ctx, "o", "builtin::ngram-384"))
			for i := range 2 {
				if i == 1 {
					clock.Add(tt.advance)
				}
				m, set, err := c.Settings().EmbeddingModel(ctx, "o")
				is.NoErr(err)
				is.True(set)
				is.Equal(m, "builtin::ngram-384")
				_, err = c.Migrations().LatestMigration(ctx, "o")
				is.True(errors.Is(err, ports.ErrNotFound))
			}
			is.Equal(s.settingReads.Load(), tt.reads)
			is.Equal(s.migrationReads.Load(), tt.reads)
		})
	}
}

// TestConceptRoutesWrites: every write through the cache drops the
// organization's entry here and announces it, a refused write too; the
// next read sees the write.
func TestConceptRoutesWrites(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		write func(c *cache.ConceptRoutes) error
		check func(is *is.I, c *cache.ConceptRoutes)
	}{
		{"set the model", func(c *cache.ConceptRoutes) error { return c.Settings().SetEmbeddingModel(ctx, "o", "openai::e") },
			func(is *is.I, c *cache.ConceptRoutes) {
				m, set, err := c.Settings().EmbeddingModel(ctx, "o")
				is.NoErr(err)
				is.True(set)
				is.Equal(m, "openai::e")
			}},
		{"clear the model", func(c *cache.ConceptRoutes) error { return c.Settings().SetEmbeddingModel(ctx, "o", "") },
			func(is *is.I, c *cache.ConceptRoutes) {
				m, set, err := c.Settings().EmbeddingModel(ctx, "o")
				is.NoErr(err)
				is.True(set)
				is.Equal(m, "")
			}},
		{"cut a type over", func(c *cache.ConceptRoutes) error {
			m := running("o")
			m.Status, m.CutTypes, m.EmbeddedCount = ports.MigrationRunning, []string{"company"}, 3
			return c.Migrations().SaveMigration(ctx, m)
		}, func(is *is.I, c *cache.ConceptRoutes) {
			m, err := c.Migrations().LatestMigration(ctx, "o")
			is.NoErr(err)
			is.Equal(m.CutTypes, []string{"company"})
		}},
		{"a refused save", func(c *cache.ConceptRoutes) error {
			m := running("o")
			m.ID = "unknown"
			return c.Migrations().SaveMigration(ctx, m)
		}, func(is *is.I, c *cache.ConceptRoutes) {
			m, err := c.Migrations().LatestMigration(ctx, "o")
			is.NoErr(err)
			is.Equal(len(m.CutTypes), 0)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, s, _, n := newRoutes(t, time.Hour)
			is.NoErr(s.SetEmbeddingModel(ctx, "o", "builtin::ngram-384"))
			is.NoErr(s.migrations.StartMigration(ctx, running("o")))
			_, _, err := c.Settings().EmbeddingModel(ctx, "o")
			is.NoErr(err)
			_, err = c.Migrations().LatestMigration(ctx, "o")
			is.NoErr(err)
			_ = tt.write(c)
			tt.check(is, c)
			is.Equal(n.All(), []string{"concept_route:o"})
			is.Equal(s.settingReads.Load(), int32(2))
		})
	}
}

// TestConceptRoutesStartMigration: a start drops the entry, so that the
// next read sees the running migration rather than none.
func TestConceptRoutesStartMigration(t *testing.T) {
	is := is.New(t)
	c, _, _, n := newRoutes(t, time.Hour)
	ctx := context.Background()
	_, err := c.Migrations().LatestMigration(ctx, "o")
	is.True(errors.Is(err, ports.ErrNotFound))
	is.NoErr(c.Migrations().StartMigration(ctx, running("o")))
	m, err := c.Migrations().LatestMigration(ctx, "o")
	is.NoErr(err)
	is.Equal(m.Status, ports.MigrationRunning)
	is.Equal(n.All(), []string{"concept_route:o"})
}

// TestConceptRoutesForget: another instance's change drops what it names,
// and only that.
func TestConceptRoutesForget(t *testing.T) {
	for _, tt := range []struct {
		kind, id string
		reread   bool
	}{
		{"concept_route", "o", true},
		{"*", "", true},
		{"concept_route", "p", false},
		{"schema", "o", false},
	} {
		t.Run(tt.kind+" "+tt.id, func(t *testing.T) {
			is := is.New(t)
			c, s, _, n := newRoutes(t, time.Hour)
			ctx := context.Background()
			is.NoErr(s.SetEmbeddingModel(ctx, "o", "builtin::ngram-384"))
			_, _, err := c.Settings().EmbeddingModel(ctx, "o")
			is.NoErr(err)
			is.NoErr(s.SetEmbeddingModel(ctx, "o", "openai::e")) // another instance's write
			c.Forget(tt.kind, tt.id)
			m, _, err := c.Settings().EmbeddingModel(ctx, "o")
			is.NoErr(err)
			want := "builtin::ngram-384"
			if tt.reread {
				want = "openai::e"
			}
			is.Equal(m, want)
			is.Equal(len(n.All()), 0)
		})
	}
}

// TestConceptRoutesCopies: each reader of the latest migration gets its
// own, slices included.
func TestConceptRoutesCopies(t *testing.T) {
	is := is.New(t)
	c, s, _, _ := newRoutes(t, time.Hour)
	ctx := context.Background()
	is.NoErr(s.migrations.StartMigration(ctx, running("o")))
	a, err := c.Migrations().LatestMigration(ctx, "o")
	is.NoErr(err)
	a.CutTypes = append(a.CutTypes, "company")
	a.ConceptTypes[0] = "changed"
	b, err := c.Migrations().LatestMigration(ctx, "o")
	is.NoErr(err)
	is.Equal(len(b.CutTypes), 0)
	is.Equal(b.ConceptTypes[0], "company")
}

// failingSettings fails its reads until told otherwise.
type failingSettings struct {
	*memory.EmbeddingSettings
	fail bool
}

func (f *failingSettings) EmbeddingModel(ctx context.Context, org string) (string, bool, error) {
	if f.fail {
		return "", false, fmt.Errorf("fake: %w", ports.ErrUnavailable)
	}
	return f.EmbeddingSettings.EmbeddingModel(ctx, org)
}

// TestConceptRoutesErrorsAreNotKept: a failed read is the store's error and
// is not kept: the next read reaches the store.
func TestConceptRoutesErrorsAreNotKept(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := &failingSettings{EmbeddingSettings: memory.NewEmbeddingSettings(), fail: true}
	is.NoErr(s.SetEmbeddingModel(ctx, "o", "builtin::ngram-384"))
	c := cache.NewConceptRoutes(s, memory.NewConceptMigrations(), nil, fakeports.NewClock(), nil, cache.ConceptRouteConfig{TTL: time.Hour})
	_, _, err := c.Settings().EmbeddingModel(ctx, "o")
	is.True(errors.Is(err, ports.ErrUnavailable))
	_, err = c.Migrations().LatestMigration(ctx, "o")
	is.True(errors.Is(err, ports.ErrUnavailable)) // one entry: the route fails whole
	s.fail = false
	m, set, err := c.Settings().EmbeddingModel(ctx, "o")
	is.NoErr(err)
	is.True(set)
	is.Equal(m, "builtin::ngram-384")
}
