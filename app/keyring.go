package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// KeyRing chooses the key that pays for a run's calls and keeps rotation
// informed of what providers said about it. A provider that needs no key
// gets none; otherwise the organization's keys come first, then the global
// ones, then the key the server's environment gives the provider.
type KeyRing struct {
	// Keys is nil when the service keeps no provider keys (then only
	// keyless providers and environment keys serve).
	Keys      ports.ProviderKeyStore
	Cipher    ports.Cipher
	Providers ports.Providers
	Clients   ports.ClientCache
	Clock     ports.Clock
	Log       *slog.Logger

	// Endpoints are the organizations' own providers (nil: none); see
	// app/orgmodels.go.
	Endpoints ports.ProviderStore
}

// systemKeyID stands for the environment's key of a provider in exclusion
// lists (its credential has no KeyID).
const systemKeyID = ""

// DefaultRest is how long a rate-limited key rests when the provider gave
// no Retry-After.
const DefaultRest = 5 * time.Second

// Pick returns the credential for orgID's calls to provider: nil for a
// keyless provider (or one this ring does not know); the endpoint of the
// organization's own provider of that name (app/orgmodels.go); a stored
// key by rotation, sticky first; else the provider's environment key. With
// none it returns a 400 no_usable_provider_key error naming the provider.
func (r *KeyRing) Pick(ctx context.Context, orgID, provider, sticky string, exclude []string) (*ports.Credential, error) {
	info, ok := r.Providers.Provider(provider)
	if !ok {
		return r.endpointCredential(ctx, orgID, provider, exclude)
	}
	if info.Keyless {
		return nil, nil
	}
	var nu *rotation.NoUsableKeyError
	if r.Keys != nil {
		p, err := r.Keys.PickProviderKey(ctx, orgID, rotation.Request{Provider: provider, Now: r.Clock.Now(), Sticky: sticky, Exclude: exclude})
		if err == nil {
			return credential(r.Cipher, p.Key), nil
		}
		if !errors.As(err, &nu) {
			return nil, err
		}
	}
	systemOut := false
	for _, x := range exclude {
		systemOut = systemOut || x == systemKeyID
	}
	if info.SystemKey && !systemOut {
		return &ports.Credential{Source: rotation.Global}, nil
	}
	e := &Error{Kind: ports.ErrInvalid, Code: "no_usable_provider_key", Field: "models"}
	if nu != nil && nu.RestUntil != nil {
		e.RetryAfter = nu.RestUntil.Sub(r.Clock.Now())
	}
	if nu == nil {
		nu = &rotation.NoUsableKeyError{Provider: provider}
	}
	e.Detail = nu.Error()
	return nil, e
}

// Usable returns whether orgID's calls to a provider can find a key now:
// a keyless provider, one with the environment's key, or one with a stored
// key of the organization or a global one in rotation (a resting,
// rate-limited key counts: it is back in seconds). An unknown provider (the
// sandbox) needs none. It reads the organization's and the global keys
// once, whatever the number of providers asked about.
func (r *KeyRing) Usable(ctx context.Context, orgID string) (func(provider string) bool, error) {
	stored := map[string]bool{}
	if r.Keys != nil {
		now := r.Clock.Now()
		for _, owner := range []string{orgID, ""} {
			ks, err := r.Keys.ListProviderKeys(ctx, owner)
			if err != nil {
				return nil, err
			}
			for _, k := range ks {
				if out := k.Out(now); out == "" || out == rotation.RateLimited {
					stored[k.Provider] = true
				}
			}
		}
	}
	return func(provider string) bool {
		info, ok := r.Providers.Provider(provider)
		return !ok || info.Keyless || info.SystemKey || stored[provider]
	}, nil
}

// Refused takes c's key out of rotation: the provider refused it.
func (r *KeyRing) Refused(ctx context.Context, orgID string, c *ports.Credential) {
	r.update(ctx, orgID, c, true, func(k *rotation.Key) { k.Refused() })
}

// Rest keeps c's key out of rotation for d (DefaultRest when zero).
func (r *KeyRing) Rest(ctx context.Context, orgID string, c *ports.Credential, d time.Duration) {
	if d <= 0 {
		d = DefaultRest
	}
	until := r.Clock.Now().Add(d)
	r.update(ctx, orgID, c, false, func(k *rotation.Key) { k.Rest(until) })
}

// update applies fn to c's stored key; forget drops its provider clients
// (a refused key's clients are of no more use; a resting key's are).
func (r *KeyRing) update(ctx context.Context, orgID string, c *ports.Credential, forget bool, fn func(*rotation.Key)) {
	if c == nil || c.KeyID == "" || r.Keys == nil {
		return
	}
	owner := orgID
	if c.Source == rotation.Global {
		owner = ""
	}
	_, err := r.Keys.UpdateProviderKey(context.WithoutCancel(ctx), owner, c.KeyID, func(k *rotation.Key) error {
		fn(k)
		return nil
	})
	if err != nil && !errors.Is(err, ports.ErrNotFound) {
		r.Log.WarnContext(ctx, "provider key: cannot record the provider's verdict", "key_id", c.KeyID, "err", err)
	}
	if forget && r.Clients != nil {
		r.Clients.Forget(c.KeyID)
	}
}

// maxKeySwitches bounds how often one call moves to another key.
const maxKeySwitches = 8

// runKey is the key one provider's calls of a run use: the job sticks to it
// while it works, and moves on (for every call of the run) when the
// provider refuses it or rate-limits it.
type runKey struct {
	mu       sync.Mutex
	orgID    string
	provider string
	cred     *ports.Credential
	tried    []string
}

func (k *runKey) current() *ports.Credential {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cred
}

// moveOn replaces failed with the next usable key, unless another call of
// the run already did. It reports whether there is a key to try.
func (k *runKey) moveOn(ctx context.Context, ring *KeyRing, failed *ports.Credential) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cred != failed {
		return k.cred != nil
	}
	k.tried = append(k.tried, failed.KeyID)
	next, err := ring.Pick(ctx, k.orgID, k.provider, "", k.tried)
	if err != nil || next == nil {
		return false
	}
	k.cred = next
	return true
}
