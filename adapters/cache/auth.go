package cache

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// The Invalidations kinds of the credentials: a key by its prefix, a user
// by id.
const (
	KindKey  = "key"
	KindUser = "user"
)

// AuthConfig bounds an Auth cache.
type AuthConfig struct {
	// TTL bounds an entry's life (0: nothing is kept; every read goes to
	// the stores).
	TTL time.Duration
	// MaxEntries bounds the prefixes and the users, each (0: no bound).
	MaxEntries int
}

// Auth is ports.AuthCache over the key and user stores. Keys are kept by
// prefix, as the store finds them, so that the caller still compares
// hashes in constant time; a prefix that finds no key is not kept.
type Auth struct {
	keys  ports.APIKeyStore
	users ports.UserStore
	notes ports.Invalidations
	log   *slog.Logger
	clock ports.Clock
	cfg   AuthConfig
	// Replaced, not cleared, to drop everything (see Schemas.c).
	byPrefix atomic.Pointer[otter.Cache[string, []*access.APIKey]]
	byID     atomic.Pointer[otter.Cache[string, *access.User]]
}

var _ ports.AuthCache = (*Auth)(nil)

// NewAuth caches the stores' keys and users; notes (nil: this process is
// the only one) carries the changes to the other instances.
func NewAuth(keys ports.APIKeyStore, users ports.UserStore, notes ports.Invalidations, c ports.Clock, log *slog.Logger, cfg AuthConfig) *Auth {
	a := &Auth{keys: keys, users: users, notes: notes, log: log, clock: c, cfg: cfg}
	a.reset()
	return a
}

func (a *Auth) reset() {
	if a.cfg.TTL <= 0 {
		return
	}
	a.byPrefix.Store(expiring[string, []*access.APIKey](a.clock, a.cfg.TTL, a.cfg.MaxEntries, nil))
	a.byID.Store(expiring[string, *access.User](a.clock, a.cfg.TTL, a.cfg.MaxEntries, nil))
}

// FindKeysByPrefix reads through the cache (ports.AuthCache).
func (a *Auth) FindKeysByPrefix(ctx context.Context, prefix string) ([]*access.APIKey, error) {
	c := a.byPrefix.Load()
	if c == nil {
		return a.keys.FindKeysByPrefix(ctx, prefix)
	}
	ks, err := c.Get(ctx, prefix, otter.LoaderFunc[string, []*access.APIKey](func(ctx context.Context, prefix string) ([]*access.APIKey, error) {
		ks, err := a.keys.FindKeysByPrefix(ctx, prefix)
		if err == nil && len(ks) == 0 {
			// Not kept: guessed prefixes would fill the cache.
			return nil, otter.ErrNotFound
		}
		return ks, err
	}))
	if errors.Is(err, otter.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]*access.APIKey, len(ks))
	for i, k := range ks {
		cp := *k
		out[i] = &cp
	}
	return out, nil
}

// GetUser reads through the cache (ports.AuthCache).
func (a *Auth) GetUser(ctx context.Context, id string) (*access.User, error) {
	c := a.byID.Load()
	if c == nil {
		return a.users.GetUser(ctx, id)
	}
	u, err := c.Get(ctx, id, otter.LoaderFunc[string, *access.User](func(ctx context.Context, id string) (*access.User, error) {
		return a.users.GetUser(ctx, id)
	}))
	if err != nil {
		return nil, err
	}
	cp := *u
	return &cp, nil
}

// KeyChanged drops k here and tells the other instances (ports.AuthCache).
func (a *Auth) KeyChanged(ctx context.Context, k *access.APIKey) {
	a.Forget(KindKey, k.Prefix)
	a.publish(ctx, KindKey, k.Prefix)
}

// UserChanged drops user id here and tells the other instances
// (ports.AuthCache).
func (a *Auth) UserChanged(ctx context.Context, id string) {
	a.Forget(KindUser, id)
	a.publish(ctx, KindUser, id)
}

func (a *Auth) publish(ctx context.Context, kind, id string) {
	if a.notes == nil {
		return
	}
	if err := a.notes.Publish(context.WithoutCancel(ctx), kind, id); err != nil && a.log != nil {
		// Other instances then hold the entry until its TTL ends.
		a.log.Error("publish cache invalidation", "kind", kind, "id", id, "err", err)
	}
}

// Forget applies another instance's change: a key (kind "key", by
// prefix), a user ("user", by id), or everything ("*"). Other kinds are
// not this cache's.
func (a *Auth) Forget(kind, id string) {
	switch kind {
	case KindAll:
		a.reset()
	case KindKey:
		if c := a.byPrefix.Load(); c != nil {
			c.Invalidate(id)
		}
	case KindUser:
		if c := a.byID.Load(); c != nil {
			c.Invalidate(id)
		}
	}
}
