package llm

import (
	"context"

	"github.com/maypok86/otter/v2"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/domain/model"
)

// clientKey names a cached provider client: one per model and credential
// version, so that a replaced or re-enabled key gets a new client.
type clientKey struct {
	model   model.Key
	keyID   string
	version int
}

// Cache keys of the clients built on a provider's own configuration.
const (
	systemKeyID  = "\x00system"
	keylessKeyID = "\x00keyless"
)

// clientCache keeps the provider clients built on first use, on otter (the
// service's one cache library): at most size of them (Config.ClientCacheSize),
// the least useful dropped first. It is safe for concurrent use.
type clientCache struct {
	c *otter.Cache[clientKey, llms.Model]
}

// newClientCache keeps up to size clients (size <= 0: no bound).
func newClientCache(size int) *clientCache {
	return &clientCache{c: otter.Must(&otter.Options[clientKey, llms.Model]{MaximumSize: max(size, 0)})}
}

// get returns the client named k, building it with build on first use;
// concurrent first uses share one build. A new client's key drops the
// clients of the key's older versions: they are stale.
func (c *clientCache) get(k clientKey, build func() (llms.Model, error)) (llms.Model, error) {
	built := false
	v, err := c.c.Get(context.Background(), k, otter.LoaderFunc[clientKey, llms.Model](func(context.Context, clientKey) (llms.Model, error) {
		built = true
		return build()
	}))
	if err != nil {
		return nil, err
	}
	if built {
		c.drop(func(old clientKey) bool { return old.keyID == k.keyID && old.version != k.version })
	}
	return v, nil
}

// forget drops the clients built on key keyID.
func (c *clientCache) forget(keyID string) {
	c.drop(func(k clientKey) bool { return k.keyID == keyID })
}

func (c *clientCache) drop(match func(clientKey) bool) {
	for k := range c.c.Keys() {
		if match(k) {
			c.c.Invalidate(k)
		}
	}
}
