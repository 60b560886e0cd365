package contract

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// rotationSets is how many random key sets RunProviderKeyRotation tries.
const rotationSets = 150

// rotationSeed seeds the key sets: set i is drawn from (rotationSeed, i),
// so a failing set is drawn again by its number.
const rotationSeed = 26

// RunProviderKeyRotation holds a store's picks to rotation.Ranked, the one
// statement of the rotation order: over many random key sets (seeded), each
// pick, made through app.KeyRing as a run makes it, must return the first
// key Ranked gives for the keys as they then are (or the provider's
// environment key when Ranked has none, or no key at all, with the time the
// first resting key comes back). A set holds the organization's keys with
// various last uses and creation times (ties included), disabled, refused,
// expired and resting keys, keys whose rest is over, global keys, sometimes
// an environment key, a sticky key (usable or not), exclusions, and keys of
// another organization and provider that must never come up. The picks'
// time steps by zero or one second, so that a store's cached candidates
// serve some of them. Some sets start with concurrent picks, which must take
// the first keys of Ranked's first tier, one each.
func RunProviderKeyRotation(t *testing.T, newStore func(t *testing.T) ports.ProviderKeyStore) {
	s := newStore(t)
	for i := range rotationSets {
		r := rand.New(rand.NewPCG(rotationSeed, uint64(i)))
		set := newRotationSet(r)
		t.Run(fmt.Sprintf("set %d", i), func(t *testing.T) {
			set.run(t, r, s)
		})
	}
}

// rotationSet is one random case: the keys as the store should hold them
// (org and global, updated as picks use them), and the requests' shape.
type rotationSet struct {
	org, provider   string
	org0, global0   []*rotation.Key // as created
	orgK, globalK   []*rotation.Key // as the picks so far left them
	noise           []*rotation.Key
	env             bool
	sticky          string
	exclude         []string
	now             time.Time
	picks           int
	concurrentPicks int
}

// rotationNow is when a set's picks start.
const rotationNow = 100

func newRotationSet(r *rand.Rand) *rotationSet {
	set := &rotationSet{org: newID("org"), provider: newID("p"), env: r.IntN(3) == 0, now: at(rotationNow),
		picks: 1 + r.IntN(6)}
	for range r.IntN(7) {
		set.org0 = append(set.org0, randomKey(r, set.org, set.provider))
	}
	for range r.IntN(4) {
		set.global0 = append(set.global0, randomKey(r, "", set.provider))
	}
	set.noise = []*rotation.Key{newProviderKey(newID("org"), set.provider, 0), newProviderKey(set.org, newID("p"), 0)}
	all := append(slices.Clone(set.org0), set.global0...)
	switch n := r.IntN(10); {
	case n < 2 && len(all) > 0:
		set.sticky = all[r.IntN(len(all))].ID
	case n == 2:
		set.sticky = newID("pk") // a key that is gone
	}
	for _, k := range all {
		if r.IntN(7) == 0 {
			set.exclude = append(set.exclude, k.ID)
		}
	}
	if set.env && r.IntN(4) == 0 {
		set.exclude = append(set.exclude, "") // the environment key (app's systemKeyID)
	}
	if set.sticky == "" && len(set.exclude) == 0 && r.IntN(3) == 0 {
		set.concurrentPicks = 2 + r.IntN(4)
	}
	for _, k := range set.org0 {
		set.orgK = append(set.orgK, cloneKey(k))
	}
	for _, k := range set.global0 {
		set.globalK = append(set.globalK, cloneKey(k))
	}
	return set
}

// randomKey returns a key of org and provider in one of rotation's states.
func randomKey(r *rand.Rand, org, provider string) *rotation.Key {
	k := newProviderKey(org, provider, r.IntN(4))
	if r.IntN(3) > 0 {
		k.LastUsedAt = atPtr(10 + r.IntN(8)) // ties happen
	}
	switch r.IntN(12) {
	case 0:
		k.Enabled = false
	case 1:
		k.Refused()
	case 2:
		k.ExpiresAt = atPtr(rotationNow - r.IntN(50))
	case 3:
		k.Rest(at(rotationNow + 1 + r.IntN(6))) // may end during the picks
	case 4:
		k.Rest(at(rotationNow - 1 - r.IntN(30))) // over
	case 5:
		k.ExpiresAt = atPtr(rotationNow + 2 + r.IntN(5)) // may expire during the picks
	case 6:
		k.Tested(true, at(5))
	}
	return k
}

func cloneKey(k *rotation.Key) *rotation.Key {
	c := *k
	return &c
}

func (set *rotationSet) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "env %v, sticky %q, exclude %q, picks %d, concurrent %d\n", set.env, set.sticky, set.exclude, set.picks,
		set.concurrentPicks)
	for _, k := range append(slices.Clone(set.org0), set.global0...) {
		fmt.Fprintf(&b, "  %s org=%q created=%v used=%v enabled=%v health=%s expires=%v rest=%v\n", k.ID, k.OrgID,
			k.CreatedAt.Sub(base), since(k.LastUsedAt), k.Enabled, k.Health, since(k.ExpiresAt), since(k.RestUntil))
	}
	return b.String()
}

func since(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Sub(base)
}

func (set *rotationSet) run(t *testing.T, r *rand.Rand, s ports.ProviderKeyStore) {
	ctx := context.Background()
	is := is.New(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(set)
		}
	})
	for _, k := range append(append(slices.Clone(set.org0), set.global0...), set.noise...) {
		is.NoErr(s.CreateProviderKey(ctx, k))
	}
	clock := &steppingClock{now: set.now}
	ring := &app.KeyRing{Keys: s, Providers: oneProvider{name: set.provider, systemKey: set.env}, Clock: clock}
	if set.concurrentPicks > 0 {
		set.pickConcurrently(t, ring, clock.Now())
	}
	for range set.picks {
		now := clock.step(time.Duration(r.IntN(2)) * time.Second)
		req := rotation.Request{Provider: set.provider, Now: now, Sticky: set.sticky, Exclude: set.exclude}
		ranked, rankErr := rotation.Ranked(set.orgK, set.globalK, req)
		c, err := ring.Pick(ctx, set.org, set.provider, set.sticky, set.exclude)
		switch {
		case rankErr == nil:
			is.NoErr(err)
			is.Equal(c.KeyID, ranked[0].ID) // the first of Ranked
			is.Equal(c.Source, ranked[0].Source())
			rotation.Pick{Key: ranked[0]}.Use(now)
		case set.env && !slices.Contains(set.exclude, ""):
			is.NoErr(err)
			is.Equal(c.KeyID, "") // the environment key, after every stored one
			is.Equal(c.Source, rotation.Global)
		default:
			var nu *rotation.NoUsableKeyError
			is.True(errors.As(rankErr, &nu))
			var e *app.Error
			is.True(errors.As(err, &e)) // no key at all
			is.Equal(e.Code, "no_usable_provider_key")
			var retry time.Duration
			if nu.RestUntil != nil {
				retry = nu.RestUntil.Sub(now) // when the first resting key comes back
			}
			is.Equal(e.RetryAfter, retry)
		}
	}
	// The store recorded each use as the picks made them.
	for _, want := range append(slices.Clone(set.orgK), set.globalK...) {
		got, err := s.GetProviderKey(ctx, want.OrgID, want.ID)
		is.NoErr(err)
		is.Equal(got.Uses, want.Uses)
		sameTimePtr(t, "LastUsedAt of "+want.ID, got.LastUsedAt, want.LastUsedAt)
	}
	for _, n := range set.noise {
		got, err := s.GetProviderKey(ctx, n.OrgID, n.ID)
		is.NoErr(err)
		is.Equal(got.Uses, int64(0)) // another organization's or provider's key is never picked
	}
}

// pickConcurrently makes set.concurrentPicks picks at once at now, at most
// as many as Ranked has keys in its first tier (the organization's, or the
// global ones when it has none): they must take the first keys of Ranked,
// one each. Past the first tier the outcome depends on timing: a pick may
// find an organization key that another is taking and take a global one
// (PostgreSQL), or find it taken already and take it again (memory), as
// sequential picks do.
func (set *rotationSet) pickConcurrently(t *testing.T, ring *app.KeyRing, now time.Time) {
	is := is.New(t)
	ranked, err := rotation.Ranked(set.orgK, set.globalK, rotation.Request{Provider: set.provider, Now: now})
	if err != nil {
		return
	}
	tier := 0
	for tier < len(ranked) && ranked[tier].Source() == ranked[0].Source() {
		tier++
	}
	n := min(set.concurrentPicks, tier)
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := ring.Pick(context.Background(), set.org, set.provider, "", nil)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = c.KeyID
		})
	}
	wg.Wait()
	var want []string
	for _, k := range ranked[:n] {
		want = append(want, k.ID)
		rotation.Pick{Key: k}.Use(now)
	}
	slices.Sort(got)
	slices.Sort(want)
	is.Equal(got, want)
}

// oneProvider knows one provider, with or without an environment key.
type oneProvider struct {
	name      string
	systemKey bool
}

func (p oneProvider) Provider(name string) (ports.ProviderInfo, bool) {
	return ports.ProviderInfo{Name: name, Type: "openai", SystemKey: p.systemKey}, name == p.name
}

// steppingClock is a clock the test moves.
type steppingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppingClock) step(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
