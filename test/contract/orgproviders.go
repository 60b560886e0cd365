package contract

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/ports"
)

func price(n int64) *int64 { return &n }

// newOrgProvider returns an enabled provider of org with a key and one
// model, created at second n.
func newOrgProvider(org, name string, n int) *orgprovider.Provider {
	return &orgprovider.Provider{ID: newID("prov"), OrgID: org, Name: name, Type: orgprovider.TypeOpenAICompatible,
		BaseURL: "https://llm.example.com/v1", Sealed: []byte("sealed-" + newID("s")), Suffix: "wxyz", Version: 1, Enabled: true,
		Models: []orgprovider.Model{{ID: newID("m"), Name: "llama3", ContextLength: 8192, InputPerMTok: price(100_000), CreatedAt: at(n),
			Caps: orgprovider.Caps{ResponseSchema: true, StrictOutput: true, Vision: true, VideoInput: true}}},
		CreatedAt: at(n), UpdatedAt: at(n)}
}

func checkOrgProvider(t *testing.T, got, want *orgprovider.Provider) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Name, want.Name)
	is.Equal(got.Type, want.Type)
	is.Equal(got.BaseURL, want.BaseURL)
	is.Equal(string(got.Sealed), string(want.Sealed))
	is.Equal(len(got.Sealed) == 0, len(want.Sealed) == 0)
	is.Equal(got.Suffix, want.Suffix)
	is.Equal(got.Version, want.Version)
	is.Equal(got.Enabled, want.Enabled)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
	sameTime(t, "UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	is.Equal(len(got.Models), len(want.Models))
	for i := range min(len(got.Models), len(want.Models)) {
		g, w := got.Models[i], want.Models[i]
		is.Equal(g.ID, w.ID)
		is.Equal(g.Name, w.Name)
		is.Equal(g.ContextLength, w.ContextLength)
		is.Equal(fmt.Sprint(deref(g.InputPerMTok)), fmt.Sprint(deref(w.InputPerMTok)))
		is.Equal(fmt.Sprint(deref(g.OutputPerMTok)), fmt.Sprint(deref(w.OutputPerMTok)))
		is.Equal(g.Discovered, w.Discovered)
		is.Equal(g.Caps, w.Caps)
		sameTime(t, "Model.CreatedAt", g.CreatedAt, w.CreatedAt)
	}
}

// deref shows an optional price: "none" or its value.
func deref(p *int64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// RunProviderStore runs the ProviderStore contract (organizations' own
// providers) against the stores newStore returns. Every case uses
// organizations of its own.
func RunProviderStore(t *testing.T, newStore func(t *testing.T) ports.ProviderStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.ProviderStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.ProviderStore) {
			full := newOrgProvider(newID("org"), "full", 0)
			full.Models = append(full.Models, orgprovider.Model{ID: newID("m"), Name: "discovered/one", OutputPerMTok: price(0),
				Discovered: true, CreatedAt: at(5)})
			keyless := newOrgProvider(newID("org"), "keyless", 1)
			keyless.Sealed, keyless.Suffix, keyless.Enabled, keyless.Models, keyless.Version = nil, "", false, []orgprovider.Model{}, 3
			for _, p := range []*orgprovider.Provider{full, keyless} {
				t.Run(p.Name, func(t *testing.T) {
					is := is.New(t)
					want := *p
					want.Sealed = append([]byte(nil), p.Sealed...)
					want.Models = append([]orgprovider.Model(nil), p.Models...)
					is.NoErr(s.CreateProvider(ctx, p))
					if len(p.Sealed) > 0 {
						p.Sealed[0] = 'm' // the store keeps its own copy
					}
					if len(p.Models) > 0 {
						p.Models[0].Name = "changed"
					}
					got, err := s.GetProvider(ctx, p.OrgID, p.ID)
					is.NoErr(err)
					checkOrgProvider(t, got, &want)
					got, err = s.ProviderByName(ctx, p.OrgID, p.Name)
					is.NoErr(err)
					checkOrgProvider(t, got, &want)
				})
			}
		}},
		{"another organization's provider is not found", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			p := newOrgProvider(newID("org"), "mine", 0)
			is.NoErr(s.CreateProvider(ctx, p))
			other := newID("org")
			_, err := s.GetProvider(ctx, other, p.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.ProviderByName(ctx, other, p.Name)
			is.True(errors.Is(err, ports.ErrNotFound))
			called := false
			_, err = s.UpdateProvider(ctx, other, p.ID, func(*orgprovider.Provider) error { called = true; return nil })
			is.True(errors.Is(err, ports.ErrNotFound))
			is.True(!called)
			is.True(errors.Is(s.DeleteProvider(ctx, other, p.ID), ports.ErrNotFound))
			ps, err := s.ListProviders(ctx, other)
			is.NoErr(err)
			is.Equal(len(ps), 0)
			_, err = s.GetProvider(ctx, p.OrgID, p.ID) // still there
			is.NoErr(err)
		}},
		{"missing provider", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			org := newID("org")
			_, err := s.GetProvider(ctx, org, newID("prov"))
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.ProviderByName(ctx, org, "nothing")
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"names are unique per organization", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			org := newID("org")
			p := newOrgProvider(org, "local", 0)
			is.NoErr(s.CreateProvider(ctx, p))
			is.True(errors.Is(s.CreateProvider(ctx, newOrgProvider(org, "local", 1)), ports.ErrConflict))
			is.NoErr(s.CreateProvider(ctx, newOrgProvider(newID("org"), "local", 1))) // another organization's
			again := newOrgProvider(org, "other", 2)
			again.ID = p.ID
			is.True(errors.Is(s.CreateProvider(ctx, again), ports.ErrConflict))
		}},
		{"list by name, the organization's only", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			org := newID("org")
			for i, n := range []string{"zeta", "alpha", "mid"} {
				is.NoErr(s.CreateProvider(ctx, newOrgProvider(org, n, i)))
			}
			is.NoErr(s.CreateProvider(ctx, newOrgProvider(newID("org"), "beta", 9)))
			ps, err := s.ListProviders(ctx, org)
			is.NoErr(err)
			var names []string
			for _, p := range ps {
				names = append(names, p.Name)
				is.Equal(p.OrgID, org)
			}
			is.Equal(names, []string{"alpha", "mid", "zeta"})
		}},
		{"update applies the closure", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			p := newOrgProvider(newID("org"), "upd", 0)
			is.NoErr(s.CreateProvider(ctx, p))
			got, err := s.UpdateProvider(ctx, p.OrgID, p.ID, func(u *orgprovider.Provider) error {
				u.Name = "renamed"
				u.SetBaseURL("https://other.example.com/v1")
				u.SetKey(nil, "")
				u.Enabled = false
				u.UpdatedAt = at(60)
				u.ID, u.OrgID, u.CreatedAt = "hijack", "hijack", at(99) // ignored
				return u.AddModel(orgprovider.Model{ID: "m-new", Name: "qwen3", OutputPerMTok: price(7), CreatedAt: at(60)})
			})
			is.NoErr(err)
			want := *p
			want.Name, want.BaseURL, want.Sealed, want.Suffix, want.Enabled, want.Version, want.UpdatedAt = "renamed", "https://other.example.com/v1", nil, "", false, 3, at(60)
			want.Models = append(append([]orgprovider.Model(nil), p.Models...), orgprovider.Model{ID: "m-new", Name: "qwen3", OutputPerMTok: price(7), CreatedAt: at(60)})
			checkOrgProvider(t, got, &want)
			stored, err := s.GetProvider(ctx, p.OrgID, p.ID)
			is.NoErr(err)
			checkOrgProvider(t, stored, &want)
			_, err = s.ProviderByName(ctx, p.OrgID, "upd")
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"a failing closure writes nothing", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			p := newOrgProvider(newID("org"), "keep", 0)
			is.NoErr(s.CreateProvider(ctx, p))
			_, err := s.UpdateProvider(ctx, p.OrgID, p.ID, func(u *orgprovider.Provider) error {
				u.Name = "lost"
				return errBoom
			})
			is.True(errors.Is(err, errBoom))
			got, err := s.GetProvider(ctx, p.OrgID, p.ID)
			is.NoErr(err)
			checkOrgProvider(t, got, p)
		}},
		{"a rename onto a used name conflicts", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			org := newID("org")
			a, b := newOrgProvider(org, "a", 0), newOrgProvider(org, "b", 1)
			is.NoErr(s.CreateProvider(ctx, a))
			is.NoErr(s.CreateProvider(ctx, b))
			_, err := s.UpdateProvider(ctx, org, b.ID, func(u *orgprovider.Provider) error { u.Name = "a"; return nil })
			is.True(errors.Is(err, ports.ErrConflict))
			got, err := s.GetProvider(ctx, org, b.ID)
			is.NoErr(err)
			is.Equal(got.Name, "b")
		}},
		{"all providers, of every organization, by id", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			a, b := newOrgProvider(newID("org"), "a", 0), newOrgProvider(newID("org"), "b", 1)
			is.NoErr(s.CreateProvider(ctx, a))
			is.NoErr(s.CreateProvider(ctx, b))
			all, err := s.AllProviders(ctx)
			is.NoErr(err)
			seen := map[string]*orgprovider.Provider{}
			for i, p := range all {
				if i > 0 {
					is.True(all[i-1].ID < p.ID)
				}
				seen[p.ID] = p
			}
			is.True(seen[a.ID] != nil)
			is.True(seen[b.ID] != nil)
			checkOrgProvider(t, seen[b.ID], b)
		}},
		{"delete", func(t *testing.T, s ports.ProviderStore) {
			is := is.New(t)
			p := newOrgProvider(newID("org"), "gone", 0)
			is.NoErr(s.CreateProvider(ctx, p))
			is.NoErr(s.DeleteProvider(ctx, p.OrgID, p.ID))
			_, err := s.GetProvider(ctx, p.OrgID, p.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			is.True(errors.Is(s.DeleteProvider(ctx, p.OrgID, p.ID), ports.ErrNotFound))
			is.NoErr(s.CreateProvider(ctx, newOrgProvider(p.OrgID, "gone", 1))) // the name is free again
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

// RunProviderStoreConcurrency checks that updates are atomic: 20
// goroutines each add a model to one provider, and every model is kept.
func RunProviderStoreConcurrency(t *testing.T, newStore func(t *testing.T) ports.ProviderStore) {
	is := is.New(t)
	ctx := context.Background()
	s := newStore(t)
	p := newOrgProvider(newID("org"), "race", 0)
	is.NoErr(s.CreateProvider(ctx, p))
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpdateProvider(ctx, p.OrgID, p.ID, func(u *orgprovider.Provider) error {
				return u.AddModel(orgprovider.Model{ID: newID("m"), Name: fmt.Sprintf("m%02d", i), CreatedAt: at(i)})
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	got, err := s.GetProvider(ctx, p.OrgID, p.ID)
	is.NoErr(err)
	var names []string
	for _, m := range got.Models[1:] {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	is.Equal(len(names), n)
	for i, name := range names {
		is.Equal(name, fmt.Sprintf("m%02d", i))
	}
}
