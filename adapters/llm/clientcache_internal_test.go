package llm

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/domain/model"
)

// stubModel is a client the cache can hold; only its identity matters.
type stubModel struct {
	llms.Model
	n int32
}

// TestClientCache: a client is built once per model, key and version, and
// concurrent first uses share the build; a failed build keeps nothing; a
// key's new version drops its older clients; forget drops a key's clients
// and no other.
func TestClientCache(t *testing.T) {
	is := is.New(t)
	c := newClientCache(64)
	var builds atomic.Int32
	build := func() (llms.Model, error) { return &stubModel{n: builds.Add(1)}, nil }
	m1 := model.Key{Provider: "p", Model: "m1"}
	m2 := model.Key{Provider: "p", Model: "m2"}
	k1v1 := clientKey{model: m1, keyID: "k1", version: 1}

	var wg sync.WaitGroup
	got := make([]llms.Model, 8)
	for i := range got {
		wg.Go(func() {
			v, err := c.get(k1v1, build)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	is.Equal(builds.Load(), int32(1))
	for _, v := range got {
		is.Equal(v, got[0]) // one client for all
	}

	_, err := c.get(clientKey{model: m1, keyID: "bad"}, func() (llms.Model, error) { return nil, errors.New("no") })
	is.True(err != nil)
	_, err = c.get(clientKey{model: m1, keyID: "bad"}, build)
	is.NoErr(err) // the failure was not kept

	_, err = c.get(clientKey{model: m2, keyID: "k1", version: 1}, build)
	is.NoErr(err)
	_, err = c.get(clientKey{model: m1, keyID: "k2", version: 1}, build)
	is.NoErr(err)
	_, err = c.get(clientKey{model: m1, keyID: "k1", version: 2}, build) // k1 replaced
	is.NoErr(err)
	has := func(k clientKey) bool { _, ok := c.c.GetIfPresent(k); return ok }
	is.True(!has(k1v1))                                          // stale
	is.True(!has(clientKey{model: m2, keyID: "k1", version: 1})) // stale too
	is.True(has(clientKey{model: m1, keyID: "k2", version: 1}))
	is.True(has(clientKey{model: m1, keyID: "k1", version: 2}))

	c.forget("k1")
	is.True(!has(clientKey{model: m1, keyID: "k1", version: 2}))
	is.True(has(clientKey{model: m1, keyID: "k2", version: 1}))
}
