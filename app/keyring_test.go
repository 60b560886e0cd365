package app_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// countedPicks counts the store's picks.
type countedPicks struct {
	ports.ProviderKeyStore
	picks atomic.Int32
}

func (c *countedPicks) PickProviderKey(ctx context.Context, orgID string, req rotation.Request) (rotation.Pick, error) {
	c.picks.Add(1)
	return c.ProviderKeyStore.PickProviderKey(ctx, orgID, req)
}

// TestPickKnownSkipsTheStore: StoredKeys tells which providers have stored
// keys; PickKnown then asks the store only for those, and gives the others
// their environment key (or refuses them) as Pick would.
func TestPickKnownSkipsTheStore(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	store := &countedPicks{ProviderKeyStore: memory.NewProviderKeyStore()}
	is.NoErr(store.CreateProviderKey(ctx, &rotation.Key{ID: "k1", OrgID: "org1", Provider: "stored", Name: "k",
		Sealed: []byte("x"), Enabled: true, Health: rotation.Valid, CreatedAt: now}))
	ring := &app.KeyRing{Keys: store, Clock: fixedClock{now}, Log: slog.New(slog.DiscardHandler), Providers: providers{
		"stored": {Name: "stored", Type: "openai", SystemKey: true},
		"envkey": {Name: "envkey", Type: "openai", SystemKey: true},
		"bare":   {Name: "bare", Type: "openai"},
	}}
	known := ring.StoredKeys(ctx, "org1", []string{"stored", "envkey", "bare"})()
	is.Equal(known, map[string]bool{"stored": true})

	c, err := ring.PickKnown(ctx, "org1", "stored", known["stored"])
	is.NoErr(err)
	is.Equal(c.KeyID, "k1") // the stored key, picked from the store
	is.Equal(store.picks.Load(), int32(1))

	c, err = ring.PickKnown(ctx, "org1", "envkey", known["envkey"])
	is.NoErr(err)
	is.Equal(c.KeyID, "") // the environment's key
	is.Equal(c.Source, rotation.Global)
	_, err = ring.PickKnown(ctx, "org1", "bare", known["bare"])
	var ae *app.Error
	is.True(errors.As(err, &ae))
	is.Equal(ae.Code, "no_usable_provider_key")
	is.Equal(store.picks.Load(), int32(1)) // neither asked the store
}
