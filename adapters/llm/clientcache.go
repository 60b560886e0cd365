package llm

import (
	"sync"

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

// maxClients bounds the client cache; past it the cache starts again (a
// client is cheap to build, and a key's clients are few).
const maxClients = 4096

// clientCache keeps the provider clients built on first use. It is safe
// for concurrent use.
type clientCache struct {
	mu sync.RWMutex
	m  map[clientKey]llms.Model
}

func newClientCache() *clientCache { return &clientCache{m: map[clientKey]llms.Model{}} }

// get returns the client named k, building it with build on first use.
// Two first uses may both build; one client is kept.
func (c *clientCache) get(k clientKey, build func() (llms.Model, error)) (llms.Model, error) {
	c.mu.RLock()
	v := c.m[k]
	c.mu.RUnlock()
	if v != nil {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxClients {
		clear(c.m)
	}
	for old := range c.m {
		// Clients of an older version of the same key are stale.
		if old.keyID == k.keyID && old.version != k.version {
			delete(c.m, old)
		}
	}
	c.m[k] = v
	return v, nil
}

// forget drops the clients built on key keyID.
func (c *clientCache) forget(keyID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.keyID == keyID {
			delete(c.m, k)
		}
	}
}
