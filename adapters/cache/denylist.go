package cache

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// KindDeny is the Invalidations kind of a denied access token; its id is
// "<jti> <expiry in Unix seconds>".
const KindDeny = "deny"

// Denylist is ports.AccessDenylist: the denied access-token ids held in
// memory (Denied is a map lookup, no round trip), written through to a
// DeniedTokenStore so that an instance that starts later loads them, and
// announced to the other instances through Invalidations (NOTIFY on
// PostgreSQL). Entries are dropped once their token has expired.
type Denylist struct {
	store ports.DeniedTokenStore
	notes ports.Invalidations
	clock ports.Clock
	log   *slog.Logger

	mu  sync.RWMutex
	ids map[string]time.Time
}

var _ ports.AccessDenylist = (*Denylist)(nil)

// NewDenylist returns a Denylist over store, loading its live entries.
// notes (nil: this process is the only one) carries new entries to the
// other instances.
func NewDenylist(ctx context.Context, store ports.DeniedTokenStore, notes ports.Invalidations, c ports.Clock, log *slog.Logger) (*Denylist, error) {
	d := &Denylist{store: store, notes: notes, clock: c, log: log, ids: map[string]time.Time{}}
	if err := d.Reload(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// Reload adds the store's live entries (after a restart of the listener,
// when notifications may have been missed).
func (d *Denylist) Reload(ctx context.Context) error {
	ts, err := d.store.DeniedTokens(ctx, d.clock.Now())
	if err != nil {
		return fmt.Errorf("load the access-token denylist: %w", err)
	}
	d.add(ts)
	return nil
}

func (d *Denylist) add(ts []access.DeniedToken) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range ts {
		if t.ID != "" && t.ExpiresAt.After(d.ids[t.ID]) {
			d.ids[t.ID] = t.ExpiresAt
		}
	}
}

// Denied reports whether the token with this id is denied.
func (d *Denylist) Denied(id string) bool {
	if id == "" {
		return false
	}
	d.mu.RLock()
	_, ok := d.ids[id]
	d.mu.RUnlock()
	return ok
}

// Deny denies ts here at once, stores them and tells the other instances.
func (d *Denylist) Deny(ctx context.Context, ts []access.DeniedToken) error {
	if len(ts) == 0 {
		return nil
	}
	d.add(ts)
	if err := d.store.DenyTokens(context.WithoutCancel(ctx), ts); err != nil {
		return err
	}
	if d.notes == nil {
		return nil
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID + " " + strconv.FormatInt(t.ExpiresAt.Unix()+1, 10)
	}
	if err := d.notes.PublishAll(context.WithoutCancel(ctx), KindDeny, ids); err != nil && d.log != nil {
		// Stored: other instances load it when their listener reconnects.
		d.log.Error("publish denied access tokens", "n", len(ids), "err", err)
	}
	return nil
}

// Forget applies another instance's announcement: a denied token (kind
// "deny"), or "*" (the listener reconnected: reload from the store).
// Other kinds are not the denylist's.
func (d *Denylist) Forget(kind, id string) {
	switch kind {
	case KindAll:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Reload(ctx); err != nil && d.log != nil {
			d.log.Error("reload the access-token denylist", "err", err)
		}
	case KindDeny:
		jti, exp, _ := strings.Cut(id, " ")
		secs, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			// Unknown expiry: keep it for the longest an access token lives
			// here; Purge drops it then.
			secs = d.clock.Now().Add(24 * time.Hour).Unix()
		}
		d.add([]access.DeniedToken{{ID: jti, ExpiresAt: time.Unix(secs, 0).UTC()}})
	}
}

// Purge drops the expired entries here and from the store.
func (d *Denylist) Purge(ctx context.Context) error {
	now := d.clock.Now()
	d.mu.Lock()
	for id, exp := range d.ids {
		if !exp.After(now) {
			delete(d.ids, id)
		}
	}
	d.mu.Unlock()
	return d.store.PurgeDeniedTokens(ctx, now)
}
