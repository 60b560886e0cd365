package cache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

// gate holds the reads of a fake store: while it is set, a read reports
// itself on reading and waits for open.
type gate struct {
	mu      sync.Mutex
	reading chan struct{}
	open    chan struct{}
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reading, g.open = make(chan struct{}, 8), make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
	g.reading, g.open = nil, nil
}

func (g *gate) pass() {
	g.mu.Lock()
	reading, open := g.reading, g.open
	g.mu.Unlock()
	if open != nil {
		reading <- struct{}{}
		<-open
	}
}

// schemas is a SchemaStore of one version per schema, counting reads.
type schemas struct {
	ports.SchemaStore
	gate
	mu    sync.Mutex
	m     map[string]*schema.Schema
	reads atomic.Int32
}

func (s *schemas) put(org, id, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*schema.Schema{}
	}
	s.m[org+"/"+id] = &schema.Schema{ID: id, OrgID: org, Content: json.RawMessage(content)}
}

func (s *schemas) GetSchema(_ context.Context, org, id string) (*schema.Schema, error) {
	s.reads.Add(1)
	s.mu.Lock()
	sc, ok := s.m[org+"/"+id]
	s.mu.Unlock()
	s.pass()
	if !ok {
		return nil, fmt.Errorf("fake: schema %s: %w", id, ports.ErrNotFound)
	}
	cp := *sc
	return &cp, nil
}

func newSchemas(t *testing.T, ttl time.Duration) (*cache.Schemas, *schemas, *fakeports.Clock, *fakeports.Notes) {
	t.Helper()
	store, clock, n := &schemas{}, fakeports.NewClock(), &fakeports.Notes{}
	store.put("o", "s", `{"v":1}`)
	return cache.NewSchemas(store, n, clock, nil, cache.SchemaConfig{TTL: ttl, MaxBytes: 1 << 20}), store, clock, n
}

// TestSchemasExpiry: an entry serves for its TTL by the Clock port, then
// the store is read again; with no TTL every read goes to the store.
func TestSchemasExpiry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ttl     time.Duration
		advance time.Duration
		reads   int32
	}{
		{"fresh", time.Minute, 0, 1},
		{"just before the ttl", time.Minute, time.Minute - time.Nanosecond, 1},
		{"at the ttl", time.Minute, time.Minute, 2},
		{"long after", time.Minute, time.Hour, 2},
		{"no ttl", 0, 0, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, store, clock, _ := newSchemas(t, tt.ttl)
			ctx := context.Background()
			_, err := c.GetSchema(ctx, "o", "s")
			is.NoErr(err)
			clock.Add(tt.advance)
			sc, err := c.GetSchema(ctx, "o", "s")
			is.NoErr(err)
			is.Equal(string(sc.Content), `{"v":1}`)
			is.Equal(store.reads.Load(), tt.reads)
		})
	}
}

// TestSchemasCopies: each reader gets a struct of its own.
func TestSchemasCopies(t *testing.T) {
	is := is.New(t)
	c, _, _, _ := newSchemas(t, time.Minute)
	ctx := context.Background()
	a, err := c.GetSchema(ctx, "o", "s")
	is.NoErr(err)
	a.Name = "changed"
	b, err := c.GetSchema(ctx, "o", "s")
	is.NoErr(err)
	is.Equal(b.Name, "")
}

// TestSchemasErrorsAreNotKept: a failed read is the store's error, as the
// store said it, and is not kept.
func TestSchemasErrorsAreNotKept(t *testing.T) {
	is := is.New(t)
	c, store, _, _ := newSchemas(t, time.Minute)
	ctx := context.Background()
	_, err := c.GetSchema(ctx, "o", "missing")
	is.True(errors.Is(err, ports.ErrNotFound))
	store.put("o", "missing", `{}`)
	_, err = c.GetSchema(ctx, "o", "missing")
	is.NoErr(err)
}

// TestSchemasInvalidation: a change here (Changed: dropped and announced)
// or another instance's (Forget) drops what it names, and only that.
func TestSchemasInvalidation(t *testing.T) {
	for _, tt := range []struct {
		name     string
		change   func(c *cache.Schemas)
		reread   bool
		announce []string
	}{
		{"changed here", func(c *cache.Schemas) { c.Changed(context.Background(), "o", "s") }, true, []string{"schema:o/s"}},
		{"another schema changed here", func(c *cache.Schemas) { c.Changed(context.Background(), "o", "t") }, false, []string{"schema:o/t"}},
		{"forget the schema", func(c *cache.Schemas) { c.Forget("schema", "o/s") }, true, nil},
		{"forget everything", func(c *cache.Schemas) { c.Forget("*", "") }, true, nil},
		{"forget an id it cannot read", func(c *cache.Schemas) { c.Forget("schema", "garbled") }, true, nil},
		{"forget another org's", func(c *cache.Schemas) { c.Forget("schema", "p/s") }, false, nil},
		{"forget another kind", func(c *cache.Schemas) { c.Forget("key", "o/s") }, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, store, _, n := newSchemas(t, time.Hour)
			ctx := context.Background()
			_, err := c.GetSchema(ctx, "o", "s")
			is.NoErr(err)
			store.put("o", "s", `{"v":2}`)
			tt.change(c)
			sc, err := c.GetSchema(ctx, "o", "s")
			is.NoErr(err)
			want := `{"v":1}`
			if tt.reread {
				want = `{"v":2}`
			}
			is.Equal(string(sc.Content), want)
			is.Equal(n.All(), tt.announce)
		})
	}
}

// TestSchemasKeepNoReadOverlappingADrop: a read in flight when its schema,
// or everything, is dropped is not kept: the reader reads again, and the
// next reader gets that second read.
func TestSchemasKeepNoReadOverlappingADrop(t *testing.T) {
	for _, tt := range []struct {
		name string
		drop func(c *cache.Schemas)
	}{
		{"changed here", func(c *cache.Schemas) { c.Changed(context.Background(), "o", "s") }},
		{"forget the schema", func(c *cache.Schemas) { c.Forget("schema", "o/s") }},
		{"forget everything", func(c *cache.Schemas) { c.Forget("*", "") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, store, _, _ := newSchemas(t, time.Hour)
			ctx := context.Background()
			store.hold()
			got := make(chan string, 1)
			go func() {
				sc, err := c.GetSchema(ctx, "o", "s")
				if err != nil {
					got <- err.Error()
					return
				}
				got <- string(sc.Content)
			}()
			<-store.reading // read v1, not returned yet
			store.put("o", "s", `{"v":2}`)
			tt.drop(c)
			store.release()
			first := <-got
			sc, err := c.GetSchema(ctx, "o", "s")
			is.NoErr(err)
			is.Equal(string(sc.Content), `{"v":2}`) // the read from before the drop was not kept
			if tt.name != "forget everything" {
				// Per key, the reader itself read again.
				is.Equal(first, `{"v":2}`)
			}
		})
	}
}

// users and keys are the credential stores, counting reads.
type creds struct {
	ports.APIKeyStore
	ports.UserStore
	gate
	mu        sync.Mutex
	keys      map[string][]*access.APIKey
	users     map[string]*access.User
	keyReads  atomic.Int32
	userReads atomic.Int32
}

func (c *creds) FindKeysByPrefix(_ context.Context, prefix string) ([]*access.APIKey, error) {
	c.keyReads.Add(1)
	c.mu.Lock()
	var out []*access.APIKey
	for _, k := range c.keys[prefix] {
		cp := *k
		out = append(out, &cp)
	}
	c.mu.Unlock()
	c.pass()
	return out, nil
}

func (c *creds) GetUser(_ context.Context, id string) (*access.User, error) {
	c.userReads.Add(1)
	c.mu.Lock()
	u, ok := c.users[id]
	c.mu.Unlock()
	if !ok {
		return nil, ports.ErrNotFound
	}
	cp := *u
	return &cp, nil
}

func (c *creds) setRole(prefix string, r access.Role) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[prefix][0].Role = r
}

func newAuth(t *testing.T, ttl time.Duration) (*cache.Auth, *creds, *fakeports.Clock, *fakeports.Notes) {
	t.Helper()
	store := &creds{keys: map[string][]*access.APIKey{"ent_abcdefgh": {{ID: "k1", Prefix: "ent_abcdefgh", Hash: "h", Role: access.Editor}}},
		users: map[string]*access.User{"u1": {ID: "u1", Role: access.Editor}}}
	clock, n := fakeports.NewClock(), &fakeports.Notes{}
	return cache.NewAuth(store, store, n, clock, nil, cache.AuthConfig{TTL: ttl, MaxEntries: 100}), store, clock, n
}

// TestAuthExpiry: keys and users serve for the TTL by the Clock port; a
// prefix that finds nothing is read each time; no TTL, no cache.
func TestAuthExpiry(t *testing.T) {
	for _, tt := range []struct {
		name               string
		ttl, advance       time.Duration
		prefix             string
		keyReads, userRead int32
	}{
		{"fresh", time.Minute, time.Minute - time.Nanosecond, "ent_abcdefgh", 1, 1},
		{"expired", time.Minute, time.Minute, "ent_abcdefgh", 2, 2},
		{"unknown prefix", time.Minute, 0, "ent_zzzzzzzz", 2, 1},
		{"no ttl", 0, 0, "ent_abcdefgh", 2, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, store, clock, _ := newAuth(t, tt.ttl)
			ctx := context.Background()
			for i := range 2 {
				ks, err := c.FindKeysByPrefix(ctx, tt.prefix)
				is.NoErr(err)
				is.Equal(len(ks), len(store.keys[tt.prefix]))
				u, err := c.GetUser(ctx, "u1")
				is.NoErr(err)
				is.Equal(u.ID, "u1")
				if i == 0 {
					clock.Add(tt.advance)
				}
			}
			is.Equal(store.keyReads.Load(), tt.keyReads)
			is.Equal(store.userReads.Load(), tt.userRead)
		})
	}
}

// TestAuthInvalidation: a key's change drops its prefix and announces it;
// a user's change drops the user; another instance's changes (Forget) do
// the same without announcing; "*" drops everything.
func TestAuthInvalidation(t *testing.T) {
	key := &access.APIKey{ID: "k1", Prefix: "ent_abcdefgh"}
	for _, tt := range []struct {
		name               string
		change             func(c *cache.Auth)
		keyReads, userRead int32
		announce           []string
	}{
		{"key changed here", func(c *cache.Auth) { c.KeyChanged(context.Background(), key) }, 2, 1, []string{"key:ent_abcdefgh"}},
		{"user changed here", func(c *cache.Auth) { c.UserChanged(context.Background(), "u1") }, 1, 2, []string{"user:u1"}},
		{"forget the key", func(c *cache.Auth) { c.Forget("key", "ent_abcdefgh") }, 2, 1, nil},
		{"forget another key", func(c *cache.Auth) { c.Forget("key", "ent_other000") }, 1, 1, nil},
		{"forget the user", func(c *cache.Auth) { c.Forget("user", "u1") }, 1, 2, nil},
		{"forget everything", func(c *cache.Auth) { c.Forget("*", "") }, 2, 2, nil},
		{"forget a schema", func(c *cache.Auth) { c.Forget("schema", "o/s") }, 1, 1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, store, _, n := newAuth(t, time.Hour)
			ctx := context.Background()
			read := func() {
				_, err := c.FindKeysByPrefix(ctx, "ent_abcdefgh")
				is.NoErr(err)
				_, err = c.GetUser(ctx, "u1")
				is.NoErr(err)
			}
			read()
			tt.change(c)
			read()
			is.Equal(store.keyReads.Load(), tt.keyReads)
			is.Equal(store.userReads.Load(), tt.userRead)
			is.Equal(n.All(), tt.announce)
		})
	}
}

// TestAuthKeepsNoReadOverlappingADrop: a key read in flight when the key
// is re-roled is not kept: the next request sees the new role.
func TestAuthKeepsNoReadOverlappingADrop(t *testing.T) {
	is := is.New(t)
	c, store, _, _ := newAuth(t, time.Hour)
	ctx := context.Background()
	store.hold()
	done := make(chan error, 1)
	go func() {
		_, err := c.FindKeysByPrefix(ctx, "ent_abcdefgh")
		done <- err
	}()
	<-store.reading // read as an editor's key
	store.setRole("ent_abcdefgh", access.Operator)
	c.KeyChanged(ctx, &access.APIKey{ID: "k1", Prefix: "ent_abcdefgh"})
	store.release()
	is.NoErr(<-done)
	ks, err := c.FindKeysByPrefix(ctx, "ent_abcdefgh")
	is.NoErr(err)
	is.Equal(ks[0].Role, access.Operator)
}

// TestMemo: a value is built once and shared; a failed build keeps
// nothing; concurrent Gets of one key share one build.
func TestMemo(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	m := cache.NewMemo[string, int](16)
	var builds atomic.Int32
	build := func(_ context.Context, k string) (int, error) {
		builds.Add(1)
		return len(k), nil
	}
	for range 3 {
		v, err := m.Get(ctx, "abc", build)
		is.NoErr(err)
		is.Equal(v, 3)
	}
	is.Equal(builds.Load(), int32(1))

	boom := errors.New("boom")
	_, err := m.Get(ctx, "bad", func(context.Context, string) (int, error) { return 0, boom })
	is.True(errors.Is(err, boom))
	v, err := m.Get(ctx, "bad", build)
	is.NoErr(err)
	is.Equal(v, 3)

	builds.Store(0)
	started, release := make(chan struct{}, 8), make(chan struct{})
	slow := func(_ context.Context, k string) (int, error) {
		builds.Add(1)
		started <- struct{}{}
		<-release
		return len(k), nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, err := m.Get(ctx, "shared", slow)
			if err != nil || v != 6 {
				t.Errorf("got %d, %v", v, err)
			}
		})
	}
	<-started // the rest join this build, or find its value
	close(release)
	wg.Wait()
	is.Equal(builds.Load(), int32(1))
}

// countingCompiler counts compilations; "bad" does not compile.
type countingCompiler struct{ n atomic.Int32 }

func (c *countingCompiler) Compile(_ context.Context, doc json.RawMessage) (ports.Validator, error) {
	c.n.Add(1)
	if string(doc) == "bad" {
		return nil, ports.ErrInvalid
	}
	return validator{}, nil
}

func (c *countingCompiler) Limits() schema.Limits { return schema.Limits{MaxDepth: 3} }

type validator struct{}

func (validator) Validate(any) error { return nil }

// TestCompiler: a document is compiled once by content; one that does not
// compile is compiled again each time.
func TestCompiler(t *testing.T) {
	is := is.New(t)
	next := &countingCompiler{}
	c := cache.NewCompiler(next, 16)
	for range 3 {
		_, err := c.Compile(context.Background(), json.RawMessage(`{"type":"object"}`))
		is.NoErr(err)
	}
	is.Equal(next.n.Load(), int32(1))
	for range 2 {
		_, err := c.Compile(context.Background(), json.RawMessage("bad"))
		is.True(errors.Is(err, ports.ErrInvalid))
	}
	is.Equal(next.n.Load(), int32(3))
}

// blockingCompiler compiles until its caller's context ends.
type blockingCompiler struct {
	countingCompiler
	started chan struct{}
}

func (c *blockingCompiler) Compile(ctx context.Context, doc json.RawMessage) (ports.Validator, error) {
	if c.n.Add(1) == 1 {
		close(c.started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return validator{}, nil
}

// TestCompilerOtherCallerCancelled: a caller that joins the compilation of
// another whose request ends does not get that request's context error.
func TestCompilerOtherCallerCancelled(t *testing.T) {
	is := is.New(t)
	next := &blockingCompiler{started: make(chan struct{})}
	c := cache.NewCompiler(next, 16)
	doc := json.RawMessage(`{"type":"object"}`)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Compile(ctx, doc)
		first <- err
	}()
	<-next.started
	second := make(chan error, 1)
	go func() {
		_, err := c.Compile(context.Background(), doc)
		second <- err
	}()
	time.Sleep(10 * time.Millisecond) // let the second join the first's compilation
	cancel()
	is.True(errors.Is(<-first, context.Canceled))
	is.NoErr(<-second)
	is.Equal(c.Limits(), next.Limits()) // the limits are next's
}
