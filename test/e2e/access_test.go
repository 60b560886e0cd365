package e2e_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestRefreshRotationAndReuse(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			s.register("rotate@example.com")
			type session struct {
				AccessToken  string `json:"access_token"`
				RefreshToken string `json:"refresh_token"`
			}
			var s1, s2, s3 session
			is.Equal(s.call("POST", "/api/auth/login", "", obj{"email": "rotate@example.com", "password": "correct horse battery"}, &s1), 200)
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": s1.RefreshToken}, &s2), 200)
			is.True(s2.RefreshToken != s1.RefreshToken)
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": s2.RefreshToken}, &s3), 200)
			// Reusing a rotated token revokes the whole family, including
			// the newest token.
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": s1.RefreshToken}, nil), 401)
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": s3.RefreshToken}, nil), 401)

			// Logout revokes; other sessions stay.
			var a, c session
			s.call("POST", "/api/auth/login", "", obj{"email": "rotate@example.com", "password": "correct horse battery"}, &a)
			s.call("POST", "/api/auth/login", "", obj{"email": "rotate@example.com", "password": "correct horse battery"}, &c)
			is.Equal(s.call("POST", "/api/auth/logout", "", obj{"refresh_token": a.RefreshToken}, nil), 204)
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": a.RefreshToken}, nil), 401)
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": c.RefreshToken}, nil), 200)
		})
	}
}

func TestMembers(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	owner := s.register("boss@example.com")
	var m struct {
		ID   string `json:"id"`
		Role string `json:"role"`
	}
	is.Equal(s.call("POST", "/api/users", owner.token, obj{"email": "ed@example.com", "password": "long enough pw", "role": "editor"}, &m), 201)
	is.Equal(m.Role, "editor")
	is.Equal(s.call("POST", "/api/users", owner.token, obj{"email": "ed@example.com", "password": "long enough pw", "role": "editor"}, nil), 409)
	var sess struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	is.Equal(s.call("POST", "/api/auth/login", "", obj{"email": "ed@example.com", "password": "long enough pw"}, &sess), 200)
	legacy := s.newKey(sess.AccessToken, "")
	is.Equal(s.call("GET", "/api/users", sess.AccessToken, nil, nil), 403) // user management is owner-only
	is.Equal(s.call("POST", "/api/schema/saved", legacy, obj{"name": "x", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}, nil), 201)

	// Demotion takes effect on the next request of the legacy key.
	is.Equal(s.call("PATCH", "/api/users/"+m.ID, owner.token, obj{"role": "operator"}, nil), 200)
	is.Equal(s.call("POST", "/api/schema/saved", legacy, obj{"name": "x", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}, nil), 403)

	// Deactivation ends the session, the refresh token and the legacy key
	// at once; organization keys are unaffected.
	orgKey := s.newKey(owner.token, "editor")
	is.Equal(s.call("PATCH", "/api/users/"+m.ID, owner.token, obj{"status": "deactivated"}, nil), 200)
	is.Equal(s.call("GET", "/api/auth/me", sess.AccessToken, nil, nil), 401)
	is.Equal(s.call("GET", "/api/auth/me", legacy, nil, nil), 401)
	is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": sess.RefreshToken}, nil), 401)
	is.Equal(s.call("POST", "/api/auth/login", "", obj{"email": "ed@example.com", "password": "long enough pw"}, nil), 401)
	is.Equal(s.call("GET", "/api/auth/me", orgKey, nil, nil), 200)

	// The last owner can neither leave nor be demoted, and nobody changes
	// themselves.
	var me struct {
		User struct{ ID string } `json:"user"`
	}
	s.call("GET", "/api/auth/me", owner.token, nil, &me)
	var e struct{ Detail string }
	is.Equal(s.call("PATCH", "/api/users/"+me.User.ID, owner.token, obj{"role": "editor"}, &e), 409)
	other := s.register("other-boss@example.com")
	is.Equal(s.call("PATCH", "/api/users/"+m.ID, other.token, obj{"role": "owner"}, nil), 404)
	is.Equal(s.call("PATCH", "/api/users/"+m.ID, owner.token, obj{"role": "boss"}, nil), 400)
}

func TestKeyExpiryAndSecrecy(t *testing.T) {
	is := is.New(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	cfg := testConfig("")
	cfg.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := start(t, cfg)
	owner := s.register("expiry@example.com")
	var soon, later struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	is.Equal(s.call("POST", "/api/auth/api-keys", owner.token, obj{"name": "soon", "role": "operator", "expires_at": time.Now().Add(3 * 24 * time.Hour)}, &soon), 201)
	is.Equal(s.call("POST", "/api/auth/api-keys", owner.token, obj{"name": "later", "role": "operator", "expires_in_days": 30}, &later), 201)
	is.Equal(s.call("GET", "/api/auth/me", soon.Key, nil, nil), 200)
	var list struct {
		APIKeys []struct {
			ID           string `json:"id"`
			Key          string `json:"key"`
			ExpiringSoon bool   `json:"expiring_soon"`
		} `json:"api_keys"`
	}
	is.Equal(s.call("GET", "/api/auth/api-keys", owner.token, nil, &list), 200)
	flags := map[string]bool{}
	for _, k := range list.APIKeys {
		flags[k.ID] = k.ExpiringSoon
		is.Equal(k.Key, "")
	}
	is.True(flags[soon.ID])
	is.True(!flags[later.ID])
	is.Equal(s.call("POST", "/api/auth/api-keys", owner.token, obj{"name": "past", "role": "operator", "expires_at": time.Now().Add(-time.Hour)}, nil), 400)
	// The full key never reaches the logs (only its 12-character prefix).
	mu.Lock()
	defer mu.Unlock()
	is.True(!strings.Contains(logs.String(), soon.Key))
	is.True(!strings.Contains(logs.String(), later.Key))
	is.True(strings.Contains(logs.String(), soon.Key[:12]))
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRevocationAcrossInstances: two servers on one PostgreSQL; a key
// revoked or re-roled through one is refused by the other on the next
// request (no auth cache, the default), or as soon as the NOTIFY arrives
// (auth cache on).
func TestRevocationAcrossInstances(t *testing.T) {
	for _, ttl := range []time.Duration{0, 30 * time.Second} {
		t.Run("cache="+ttl.String(), func(t *testing.T) {
			is := is.New(t)
			dsn := backends[1].dsn(t)
			cfg := testConfig(dsn)
			cfg.AuthCacheTTL = ttl
			a, b := start(t, cfg), start(t, cfg)
			owner := a.register("two@example.com")
			key := a.newKey(owner.token, "editor")
			is.Equal(b.call("GET", "/api/auth/me", key, nil, nil), 200)
			var list struct {
				APIKeys []struct{ ID, Prefix string } `json:"api_keys"`
			}
			a.call("GET", "/api/auth/api-keys", owner.token, nil, &list)
			var id string
			for _, k := range list.APIKeys {
				if k.Prefix == key[:12] {
					id = k.ID
				}
			}
			schema := obj{"name": "x", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}
			expect := func(method, path string, body any, want int) {
				t.Helper()
				if ttl == 0 {
					is.Equal(b.call(method, path, key, body, nil), want) // the very next request
					return
				}
				waitStatus(t, b, method, path, key, body, want) // B cached the key; NOTIFY drops it
			}
			is.Equal(b.call("POST", "/api/schema/saved", key, schema, nil), 201)
			is.Equal(a.call("PATCH", "/api/auth/api-keys/"+id, owner.token, obj{"role": "operator"}, nil), 200)
			expect("POST", "/api/schema/saved", schema, 403)
			is.Equal(a.call("DELETE", "/api/auth/api-keys/"+id, owner.token, nil, nil), 204)
			expect("GET", "/api/auth/me", nil, 401)
			is.Equal(a.call("GET", "/api/auth/me", key, nil, nil), 401)
			// Usage is counted (flushed in batches every 2 s, not per
			// request): wait for the flush, listing with the owner's token so
			// that the wait adds nothing to the key's count.
			uses := func() int {
				var after struct {
					APIKeys []struct {
						Prefix   string `json:"prefix"`
						UseCount int    `json:"use_count"`
					} `json:"api_keys"`
				}
				is.Equal(a.call("GET", "/api/auth/api-keys", owner.token, nil, &after), 200)
				for _, k := range after.APIKeys {
					if k.Prefix == key[:12] {
						return k.UseCount
					}
				}
				t.Fatal("the revoked key is no longer listed")
				return 0
			}
			for deadline := time.Now().Add(10 * time.Second); uses() < 3; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the key's use count is %d 10 s after its uses, want at least 3", uses())
				}
			}
		})
	}
}

// waitStatus repeats a request until it answers want, for at most 1 s, and
// logs how long the change took to arrive.
func waitStatus(t *testing.T, s *service, method, path, cred string, body any, want int) {
	t.Helper()
	t0 := time.Now()
	for {
		got := s.call(method, path, cred, body, nil)
		if got == want {
			t.Logf("%s %s answered %d after %v", method, path, want, time.Since(t0))
			return
		}
		if time.Since(t0) > time.Second {
			t.Fatalf("%s %s: still %d after 1 s, want %d", method, path, got, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
