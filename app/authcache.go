package app

import (
	"context"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
)

// authCache keeps recently authenticated access keys (by hash) and users
// (by id) so that authenticating a request needs no storage round trip.
// Entries live for the TTL at most; every change through this service drops
// them here at once and, through ports.Invalidations, on other instances.
// Revocation and expiry are still checked on every request.
type authCache struct {
	mu    sync.RWMutex
	keys  map[string]cachedKey
	users map[string]cachedUser
	// gen counts drops: a read from the store that a drop overlapped is
	// not kept, since it may have returned the object before the change.
	gen uint64
}

type cachedKey struct {
	key access.APIKey
	at  time.Time
}

type cachedUser struct {
	user access.User
	at   time.Time
}

const maxCachedAuth = 100_000

// key returns the cached key of hash; on a miss, the generation to hand
// putKey with what the store returns.
func (c *authCache) key(hash string, now time.Time, ttl time.Duration) (*access.APIKey, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.keys[hash]
	if !ok || now.Sub(e.at) > ttl {
		return nil, c.gen, false
	}
	k := e.key
	return &k, c.gen, true
}

// putKey keeps k unless a drop happened since gen was read.
func (c *authCache) putKey(k *access.APIKey, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.keys == nil || len(c.keys) >= maxCachedAuth {
		c.keys = map[string]cachedKey{}
	}
	c.keys[k.Hash] = cachedKey{key: *k, at: now}
}

// user returns the cached user id; on a miss, the generation to hand
// putUser with what the store returns.
func (c *authCache) user(id string, now time.Time, ttl time.Duration) (*access.User, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.users[id]
	if !ok || now.Sub(e.at) > ttl {
		return nil, c.gen, false
	}
	u := e.user
	return &u, c.gen, true
}

// putUser keeps u unless a drop happened since gen was read.
func (c *authCache) putUser(u *access.User, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.users == nil || len(c.users) >= maxCachedAuth {
		c.users = map[string]cachedUser{}
	}
	c.users[u.ID] = cachedUser{user: *u, at: now}
}

// drop forgets a key (kind "key", by key id), a user ("user", by id), or
// everything ("*").
func (c *authCache) drop(kind, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	switch kind {
	case "key":
		for h, e := range c.keys {
			if e.key.ID == id {
				delete(c.keys, h)
			}
		}
	case "user":
		delete(c.users, id)
	default:
		c.keys, c.users = nil, nil
	}
}

// invalidate drops kind/id here and tells the other instances.
func (s *AccessService) invalidate(ctx context.Context, kind, id string) {
	s.cache.drop(kind, id)
	if s.Invalidations == nil {
		return
	}
	if err := s.Invalidations.Publish(context.WithoutCancel(ctx), kind, id); err != nil {
		// Other instances then hold the entry until its TTL ends.
		s.Log.Error("publish cache invalidation", "kind", kind, "id", id, "err", err)
	}
}

// Forget drops a cached key ("key"), user ("user") or everything ("*");
// the listener of other instances' changes calls it.
func (s *AccessService) Forget(kind, id string) { s.cache.drop(kind, id) }

// getUser reads a user through the cache.
func (s *AccessService) getUser(ctx context.Context, id string) (*access.User, error) {
	now := s.Clock.Now()
	var gen uint64
	if s.CacheTTL > 0 {
		u, g, ok := s.cache.user(id, now, s.CacheTTL)
		if ok {
			return u, nil
		}
		gen = g
	}
	u, err := s.Users.GetUser(ctx, id)
	if err == nil && s.CacheTTL > 0 {
		s.cache.putUser(u, now, gen)
	}
	return u, err
}
