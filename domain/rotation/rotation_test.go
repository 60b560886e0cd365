package rotation_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/rotation"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(min int) *time.Time {
	t := t0.Add(time.Duration(min) * time.Minute)
	return &t
}

// key is an enabled, unchecked openai key of org "o" (or global when org
// is ""), created at minute created, last used at minute used (nil: never).
func key(id, org string, created int, used *time.Time, opts ...func(*rotation.Key)) *rotation.Key {
	k := &rotation.Key{ID: id, OrgID: org, Provider: "openai", Enabled: true, Health: rotation.Unchecked,
		CreatedAt: *at(created), LastUsedAt: used}
	for _, o := range opts {
		o(k)
	}
	return k
}

var (
	disabled = func(k *rotation.Key) { k.Enabled = false }
	invalid  = func(k *rotation.Key) { k.Health = rotation.Invalid }
	valid    = func(k *rotation.Key) { k.Health = rotation.Valid }
	expired  = func(k *rotation.Key) { k.ExpiresAt = at(-1) }
	expiring = func(k *rotation.Key) { k.ExpiresAt = at(1) }
	resting  = func(min int) func(*rotation.Key) { return func(k *rotation.Key) { k.RestUntil = at(min) } }
	rested   = func(k *rotation.Key) { k.RestUntil = at(-1) }
	provider = func(p string) func(*rotation.Key) { return func(k *rotation.Key) { k.Provider = p } }
)

func TestOut(t *testing.T) {
	tests := []struct {
		name string
		k    *rotation.Key
		want rotation.Reason
	}{
		{"unchecked", key("a", "o", 0, nil), ""},
		{"valid", key("a", "o", 0, nil, valid), ""},
		{"invalid", key("a", "o", 0, nil, invalid), rotation.InvalidKey},
		{"disabled", key("a", "o", 0, nil, disabled), rotation.Manual},
		{"disabled and invalid", key("a", "o", 0, nil, disabled, invalid), rotation.Manual},
		{"expired", key("a", "o", 0, nil, expired), rotation.Expired},
		{"expires exactly now", key("a", "o", 0, nil, func(k *rotation.Key) { k.ExpiresAt = at(0) }), rotation.Expired},
		{"expires later", key("a", "o", 0, nil, expiring), ""},
		{"invalid and expired", key("a", "o", 0, nil, invalid, expired), rotation.InvalidKey},
		{"resting", key("a", "o", 0, nil, resting(5)), rotation.RateLimited},
		{"rest ends exactly now", key("a", "o", 0, nil, func(k *rotation.Key) { k.RestUntil = at(0) }), ""},
		{"rest over", key("a", "o", 0, nil, rested), ""},
		{"expired and resting", key("a", "o", 0, nil, expired, resting(5)), rotation.Expired},
		{"global", key("a", "", 0, nil), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(tc.k.Out(t0), tc.want)
			is.Equal(tc.k.Usable(t0), tc.want == "")
		})
	}
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name        string
		org, global []*rotation.Key
		sticky      string
		exclude     []string
		want        string // key id; "" means no usable key
		source      rotation.Source
		restUntil   *time.Time // of the error
	}{
		{"nothing", nil, nil, "", nil, "", "", nil},
		{"one org key", []*rotation.Key{key("a", "o", 0, nil)}, nil, "", nil, "a", rotation.Organization, nil},
		{"one global key", nil, []*rotation.Key{key("g", "", 0, nil)}, "", nil, "g", rotation.Global, nil},
		{"org before global, even if global is older",
			[]*rotation.Key{key("a", "o", 0, at(-1))}, []*rotation.Key{key("g", "", 0, nil)}, "", nil, "a", rotation.Organization, nil},
		{"least recently used first",
			[]*rotation.Key{key("a", "o", 0, at(-1)), key("b", "o", 0, at(-3)), key("c", "o", 0, at(-2))}, nil, "", nil, "b", rotation.Organization, nil},
		{"never used before used",
			[]*rotation.Key{key("a", "o", 0, at(-60)), key("b", "o", 5, nil)}, nil, "", nil, "b", rotation.Organization, nil},
		{"never used: oldest created first",
			[]*rotation.Key{key("a", "o", 5, nil), key("b", "o", 1, nil)}, nil, "", nil, "b", rotation.Organization, nil},
		{"same times: by id",
			[]*rotation.Key{key("b", "o", 1, at(-1)), key("a", "o", 1, at(-1))}, nil, "", nil, "a", rotation.Organization, nil},
		{"global LRU when the org has none",
			nil, []*rotation.Key{key("g1", "", 0, at(-1)), key("g2", "", 0, at(-2))}, "", nil, "g2", rotation.Global, nil},
		{"invalid org key skipped",
			[]*rotation.Key{key("a", "o", 0, nil, invalid), key("b", "o", 0, at(-1))}, nil, "", nil, "b", rotation.Organization, nil},
		{"disabled org key skipped",
			[]*rotation.Key{key("a", "o", 0, nil, disabled), key("b", "o", 0, at(-1))}, nil, "", nil, "b", rotation.Organization, nil},
		{"expired org key skipped",
			[]*rotation.Key{key("a", "o", 0, nil, expired), key("b", "o", 0, at(-1))}, nil, "", nil, "b", rotation.Organization, nil},
		{"resting org key skipped",
			[]*rotation.Key{key("a", "o", 0, nil, resting(5)), key("b", "o", 0, at(-1))}, nil, "", nil, "b", rotation.Organization, nil},
		{"rested org key back",
			[]*rotation.Key{key("a", "o", 0, nil, rested), key("b", "o", 0, at(-1))}, nil, "", nil, "a", rotation.Organization, nil},
		{"all org keys out: global",
			[]*rotation.Key{key("a", "o", 0, nil, invalid), key("b", "o", 0, nil, disabled), key("c", "o", 0, nil, expired)},
			[]*rotation.Key{key("g", "", 0, nil)}, "", nil, "g", rotation.Global, nil},
		{"disabled global key skipped",
			nil, []*rotation.Key{key("g1", "", 0, nil, disabled), key("g2", "", 0, at(-1))}, "", nil, "g2", rotation.Global, nil},
		{"invalid global key skipped",
			nil, []*rotation.Key{key("g1", "", 0, nil, invalid), key("g2", "", 0, at(-1))}, "", nil, "g2", rotation.Global, nil},
		{"everything out",
			[]*rotation.Key{key("a", "o", 0, nil, invalid)}, []*rotation.Key{key("g", "", 0, nil, disabled)}, "", nil, "", "", nil},
		{"other provider ignored",
			[]*rotation.Key{key("a", "o", 0, nil, provider("anthropic"))}, nil, "", nil, "", "", nil},
		{"other provider ignored, global serves",
			[]*rotation.Key{key("a", "o", 0, nil, provider("anthropic"))}, []*rotation.Key{key("g", "", 0, nil)}, "", nil, "g", rotation.Global, nil},
		{"sticky kept though not least recently used",
			[]*rotation.Key{key("a", "o", 0, at(-10)), key("b", "o", 0, at(-1))}, nil, "b", nil, "b", rotation.Organization, nil},
		{"sticky global kept though the org now has a key",
			[]*rotation.Key{key("a", "o", 0, nil)}, []*rotation.Key{key("g", "", 0, at(-1))}, "g", nil, "g", rotation.Global, nil},
		{"sticky invalid: next by LRU",
			[]*rotation.Key{key("a", "o", 0, at(-10)), key("b", "o", 0, at(-1), invalid)}, nil, "b", nil, "a", rotation.Organization, nil},
		{"sticky resting: next",
			[]*rotation.Key{key("a", "o", 0, at(-1)), key("b", "o", 0, at(-10), resting(1))}, nil, "b", nil, "a", rotation.Organization, nil},
		{"sticky expired: next",
			[]*rotation.Key{key("a", "o", 0, at(-1)), key("b", "o", 0, at(-10), expired)}, nil, "b", nil, "a", rotation.Organization, nil},
		{"sticky deleted: next",
			[]*rotation.Key{key("a", "o", 0, at(-1))}, nil, "gone", nil, "a", rotation.Organization, nil},
		{"sticky excluded: next",
			[]*rotation.Key{key("a", "o", 0, at(-1)), key("b", "o", 0, at(-10))}, nil, "b", []string{"b"}, "a", rotation.Organization, nil},
		{"sticky of another provider is not taken",
			[]*rotation.Key{key("a", "o", 0, at(-1)), key("b", "o", 0, at(-10), provider("anthropic"))}, nil, "b", nil, "a", rotation.Organization, nil},
		{"excluded keys skipped, then global",
			[]*rotation.Key{key("a", "o", 0, nil), key("b", "o", 0, nil)}, []*rotation.Key{key("g", "", 0, nil)}, "", []string{"a", "b"}, "g", rotation.Global, nil},
		{"all excluded",
			[]*rotation.Key{key("a", "o", 0, nil)}, []*rotation.Key{key("g", "", 0, nil)}, "", []string{"a", "g"}, "", "", nil},
		{"all resting: the error says when the first returns",
			[]*rotation.Key{key("a", "o", 0, nil, resting(5)), key("b", "o", 0, nil, resting(2))}, []*rotation.Key{key("g", "", 0, nil, resting(3))},
			"", nil, "", "", at(2)},
		{"resting and invalid: rest of the resting one",
			[]*rotation.Key{key("a", "o", 0, nil, invalid), key("b", "o", 0, nil, resting(2))}, nil, "", nil, "", "", at(2)},
		{"nil entries ignored", []*rotation.Key{nil, key("a", "o", 0, nil)}, []*rotation.Key{nil}, "", nil, "a", rotation.Organization, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			p, err := rotation.Choose(tc.org, tc.global, rotation.Request{Provider: "openai", Now: t0, Sticky: tc.sticky, Exclude: tc.exclude})
			if tc.want == "" {
				is.True(errors.Is(err, rotation.ErrNoUsableKey))
				var nu *rotation.NoUsableKeyError
				is.True(errors.As(err, &nu))
				is.Equal(nu.Provider, "openai")
				is.True(len(err.Error()) > 0)
				if tc.restUntil == nil {
					is.Equal(nu.RestUntil, nil)
				} else {
					is.True(nu.RestUntil != nil && nu.RestUntil.Equal(*tc.restUntil))
				}
				return
			}
			is.NoErr(err)
			is.Equal(p.Key.ID, tc.want)
			is.Equal(p.Source, tc.source)
		})
	}
}

// TestRoundRobin: picking and using in turn serves every usable key once
// before any twice.
func TestRoundRobin(t *testing.T) {
	is := is.New(t)
	keys := []*rotation.Key{key("a", "o", 0, nil), key("b", "o", 1, nil), key("c", "o", 2, nil), key("x", "o", 3, nil, invalid)}
	var got []string
	for i := range 6 {
		now := t0.Add(time.Duration(i) * time.Second)
		p, err := rotation.Choose(keys, nil, rotation.Request{Provider: "openai", Now: now})
		is.NoErr(err)
		p.Use(now)
		got = append(got, p.Key.ID)
	}
	is.Equal(fmt.Sprint(got), "[a b c a b c]")
	is.Equal(keys[0].Uses, int64(2))
}

func TestTransitions(t *testing.T) {
	tests := []struct {
		name        string
		start       []func(*rotation.Key)
		act         func(k *rotation.Key)
		health      rotation.Health
		usable      bool
		versionBump bool
	}{
		{"test passes on unchecked", nil, func(k *rotation.Key) { k.Tested(true, t0) }, rotation.Valid, true, false},
		{"test fails on unchecked", nil, func(k *rotation.Key) { k.Tested(false, t0) }, rotation.Invalid, false, true},
		{"test fails on valid", []func(*rotation.Key){valid}, func(k *rotation.Key) { k.Tested(false, t0) }, rotation.Invalid, false, true},
		{"re-test passes on invalid", []func(*rotation.Key){invalid}, func(k *rotation.Key) { k.Tested(true, t0) }, rotation.Valid, true, true},
		{"re-test fails on invalid", []func(*rotation.Key){invalid}, func(k *rotation.Key) { k.Tested(false, t0) }, rotation.Invalid, false, false},
		{"test passes ends a rest", []func(*rotation.Key){resting(5)}, func(k *rotation.Key) { k.Tested(true, t0) }, rotation.Valid, true, false},
		{"test passes on disabled stays out", []func(*rotation.Key){disabled}, func(k *rotation.Key) { k.Tested(true, t0) }, rotation.Valid, false, false},
		{"test passes on expired stays out", []func(*rotation.Key){expired}, func(k *rotation.Key) { k.Tested(true, t0) }, rotation.Valid, false, false},
		{"refused on call", []func(*rotation.Key){valid}, func(k *rotation.Key) { k.Refused() }, rotation.Invalid, false, true},
		{"refused twice bumps once", []func(*rotation.Key){invalid}, func(k *rotation.Key) { k.Refused() }, rotation.Invalid, false, false},
		{"success makes unchecked valid", nil, func(k *rotation.Key) { k.Succeeded() }, rotation.Valid, true, false},
		{"success leaves invalid invalid", []func(*rotation.Key){invalid}, func(k *rotation.Key) { k.Succeeded() }, rotation.Invalid, false, false},
		{"replace brings invalid back", []func(*rotation.Key){invalid}, func(k *rotation.Key) { k.Replace([]byte("s"), "abcd") }, rotation.Unchecked, true, true},
		{"replace ends a rest", []func(*rotation.Key){resting(5)}, func(k *rotation.Key) { k.Replace([]byte("s"), "abcd") }, rotation.Unchecked, true, true},
		{"replace on disabled stays out", []func(*rotation.Key){disabled}, func(k *rotation.Key) { k.Replace([]byte("s"), "abcd") }, rotation.Unchecked, false, true},
		{"replace on expired stays out", []func(*rotation.Key){expired}, func(k *rotation.Key) { k.Replace([]byte("s"), "abcd") }, rotation.Unchecked, false, true},
		{"disable", nil, func(k *rotation.Key) { k.SetEnabled(false) }, rotation.Unchecked, false, true},
		{"enable a disabled key", []func(*rotation.Key){disabled}, func(k *rotation.Key) { k.SetEnabled(true) }, rotation.Unchecked, true, true},
		{"enable an enabled key", nil, func(k *rotation.Key) { k.SetEnabled(true) }, rotation.Unchecked, true, false},
		{"enable does not bring an invalid key back", []func(*rotation.Key){disabled, invalid}, func(k *rotation.Key) { k.SetEnabled(true) }, rotation.Invalid, false, true},
		{"rest", nil, func(k *rotation.Key) { k.Rest(*at(5)) }, rotation.Unchecked, false, false},
		{"rest in the past", nil, func(k *rotation.Key) { k.Rest(*at(-5)) }, rotation.Unchecked, true, false},
		{"a shorter rest does not shorten", []func(*rotation.Key){resting(10)}, func(k *rotation.Key) { k.Rest(*at(-1)) }, rotation.Unchecked, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			k := key("a", "o", 0, nil, tc.start...)
			k.Version = 3
			tc.act(k)
			is.Equal(k.Health, tc.health)
			is.Equal(k.Usable(t0), tc.usable)
			is.Equal(k.Version > 3, tc.versionBump)
		})
	}
}

func TestReplaceResetsCheck(t *testing.T) {
	is := is.New(t)
	k := key("a", "o", 0, nil)
	k.Tested(true, t0)
	is.True(k.CheckedAt != nil)
	k.Replace([]byte("new"), "wxyz")
	is.Equal(k.CheckedAt, nil)
	is.Equal(k.Suffix, "wxyz")
	is.Equal(string(k.Sealed), "new")
}

func TestSource(t *testing.T) {
	is := is.New(t)
	is.Equal(key("a", "o", 0, nil).Source(), rotation.Organization)
	is.Equal(key("a", "", 0, nil).Source(), rotation.Global)
}

func TestExpiresSoon(t *testing.T) {
	tests := []struct {
		expires *time.Time
		want    bool
	}{
		{nil, false},
		{at(60), true},
		{at(7 * 24 * 60), true},
		{at(7*24*60 + 1), false},
		{at(-1), true},
	}
	for _, tc := range tests {
		k := key("a", "o", 0, nil)
		k.ExpiresAt = tc.expires
		if got := k.ExpiresSoon(t0); got != tc.want {
			t.Errorf("expires %v: got %v, want %v", tc.expires, got, tc.want)
		}
	}
}

func TestSuffixOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"short", ""},
		{"12345678", ""},
		{"sk-proj-abcdefgh1234", "1234"},
		{"ключ-секрет-ёжик", "ёжик"},
	}
	for _, tc := range tests {
		if got := rotation.SuffixOf(tc.in); got != tc.want {
			t.Errorf("SuffixOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseHealth(t *testing.T) {
	is := is.New(t)
	for _, h := range rotation.Healths() {
		got, err := rotation.ParseHealth(string(h))
		is.NoErr(err)
		is.Equal(got, h)
	}
	_, err := rotation.ParseHealth("fine")
	is.True(err != nil)
}

func TestRanked(t *testing.T) {
	is := is.New(t)
	org := []*rotation.Key{key("a", "o", 0, at(-1)), key("b", "o", 0, at(-3)), key("x", "o", 0, nil, invalid), key("c", "o", 0, at(-2))}
	global := []*rotation.Key{key("g2", "", 0, at(-1)), key("g1", "", 0, nil)}
	ids := func(ks []*rotation.Key) string {
		var s []string
		for _, k := range ks {
			s = append(s, k.ID)
		}
		return fmt.Sprint(s)
	}
	r, err := rotation.Ranked(org, global, rotation.Request{Provider: "openai", Now: t0})
	is.NoErr(err)
	is.Equal(ids(r), "[b c a g1 g2]")
	r, err = rotation.Ranked(org, global, rotation.Request{Provider: "openai", Now: t0, Sticky: "a"})
	is.NoErr(err)
	is.Equal(ids(r), "[a b c g1 g2]")
	r, err = rotation.Ranked(org, global, rotation.Request{Provider: "openai", Now: t0, Sticky: "g2", Exclude: []string{"c"}})
	is.NoErr(err)
	is.Equal(ids(r), "[g2 b a g1]")
	// The caller's slices keep their order.
	is.Equal(ids(org), "[a b x c]")
}

// TestChooseIsFirstOfRanked checks, over random key sets, that Choose (one
// pass, no allocation) takes exactly the key Ranked puts first, with the
// same source and the same refusal when nothing is usable.
func TestChooseIsFirstOfRanked(t *testing.T) {
	is := is.New(t)
	rnd := rand.New(rand.NewPCG(7, 11))
	opts := []func(*rotation.Key){disabled, invalid, valid, expired, expiring, resting(3), resting(5), rested, provider("anthropic")}
	for n := range 5000 {
		var org, global []*rotation.Key
		var ids []string
		for i := range rnd.IntN(7) {
			owner := "o"
			if rnd.IntN(3) == 0 {
				owner = ""
			}
			var used *time.Time
			if rnd.IntN(4) > 0 {
				used = at(-rnd.IntN(4))
			}
			var o []func(*rotation.Key)
			if rnd.IntN(2) == 0 {
				o = append(o, opts[rnd.IntN(len(opts))])
			}
			k := key(fmt.Sprintf("k%d", i), owner, rnd.IntN(3), used, o...)
			ids = append(ids, k.ID)
			if owner == "" {
				global = append(global, k)
			} else {
				org = append(org, k)
			}
		}
		req := rotation.Request{Provider: "openai", Now: t0}
		if len(ids) > 0 && rnd.IntN(2) == 0 {
			req.Sticky = ids[rnd.IntN(len(ids))]
		}
		if len(ids) > 0 && rnd.IntN(3) == 0 {
			req.Exclude = []string{ids[rnd.IntN(len(ids))]}
		}
		ranked, rerr := rotation.Ranked(org, global, req)
		p, cerr := rotation.Choose(org, global, req)
		if rerr != nil {
			is.True(cerr != nil)                              // case n: both refuse
			is.Equal(cerr.Error(), rerr.Error())              // the same refusal
			is.True(errors.Is(cerr, rotation.ErrNoUsableKey)) // a NoUsableKeyError
			continue
		}
		is.NoErr(cerr)
		if p.Key != ranked[0] {
			t.Fatalf("case %d: Choose took %s, Ranked puts %s first", n, p.Key.ID, ranked[0].ID)
		}
		is.Equal(p.Source, ranked[0].Source())
	}
}

func BenchmarkChoose(b *testing.B) {
	var org, global []*rotation.Key
	for i := range 8 {
		org = append(org, key(fmt.Sprintf("o%d", i), "o", i, at(-i)))
	}
	global = append(global, key("g1", "", 0, nil), key("g2", "", 1, nil))
	req := rotation.Request{Provider: "openai", Now: t0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rotation.Choose(org, global, req); err != nil {
			b.Fatal(err)
		}
	}
}
