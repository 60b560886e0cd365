package app

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
)

// TestAuthCacheKeepsNoReadOverlappingADrop: a key or user read from the
// store while a drop happened (a revocation, a role change) is not kept,
// since the read may have returned it as it was before; one read with no
// drop meanwhile is kept.
func TestAuthCacheKeepsNoReadOverlappingADrop(t *testing.T) {
	is := is.New(t)
	var c authCache
	now, ttl := time.Unix(1000, 0), time.Minute
	k := &access.APIKey{ID: "k1", Hash: "h1"}
	u := &access.User{ID: "u1"}

	_, gen, ok := c.key("h1", now, ttl)
	is.True(!ok)
	_, ugen, ok := c.user("u1", now, ttl)
	is.True(!ok)
	c.drop("key", "k1") // the key is revoked while its read is in flight
	c.putKey(k, now, gen)
	c.putUser(u, now, ugen)
	_, _, ok = c.key("h1", now, ttl)
	is.True(!ok) // the read from before the drop was not kept
	_, _, ok = c.user("u1", now, ttl)
	is.True(!ok)

	_, gen, _ = c.key("h1", now, ttl)
	c.putKey(k, now, gen)
	got, _, ok := c.key("h1", now, ttl)
	is.True(ok) // a read that no drop overlapped is kept
	is.Equal(got.ID, "k1")
	_, ugen, _ = c.user("u1", now, ttl)
	c.putUser(u, now, ugen)
	_, _, ok = c.user("u1", now, ttl)
	is.True(ok)
}
