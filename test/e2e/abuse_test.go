package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// from is an HTTP client whose connections leave from a loopback address
// (127.0.0.2, 127.0.0.3: Linux routes all of 127/8 to lo).
func from(t *testing.T, local string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// answer is a response's status, Retry-After and error code.
type answer struct {
	status int
	retry  int
	code   string
}

// post sends body to the service with client c (headers h) and returns its answer.
func (s *service) post(c *http.Client, path string, body any, h map[string]string) answer {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", s.url+path, bytes.NewReader(raw))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(out, &e)
	a := answer{status: resp.StatusCode, code: e.Code}
	if v := resp.Header.Get("Retry-After"); v != "" {
		a.retry, _ = strconv.Atoi(v)
	}
	return a
}

// TestLoginThrottleByAddress: an attacker failing from 127.0.0.2 gets 429
// with a growing Retry-After, even with the right password from there,
// while the owner signs in from 127.0.0.3 at once. On PostgreSQL a second
// instance sharing the database counts the same failures.
func TestLoginThrottleByAddress(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			dsn := b.dsn(t)
			s := start(t, testConfig(dsn))
			s.register("victim@example.com")
			var s2 *service
			if dsn != "" {
				s2 = start(t, testConfig(dsn)) // another replica on the same database
			}
			attacker, owner := from(t, "127.0.0.2"), from(t, "127.0.0.3")
			bad := obj{"email": "victim@example.com", "password": "wrong password"}
			good := obj{"email": "victim@example.com", "password": "correct horse battery"}
			for i := 0; i < 5; i++ {
				is.Equal(s.post(attacker, "/api/auth/login", bad, nil).status, 401)
			}
			a := s.post(attacker, "/api/auth/login", bad, nil)
			is.Equal(a, answer{429, 1, "too_many_attempts"})
			is.Equal(s.post(attacker, "/api/auth/login", good, nil).status, 429) // the right password waits too, from there
			is.Equal(s.post(owner, "/api/auth/login", good, nil).status, 200)    // not from another address
			if s2 != nil {
				// The other replica sees the same count.
				is.Equal(s2.post(attacker, "/api/auth/login", bad, nil).status, 429)
				is.Equal(s2.post(owner, "/api/auth/login", good, nil).status, 200)
			}
			time.Sleep(1100 * time.Millisecond)
			is.Equal(s.post(attacker, "/api/auth/login", bad, nil).status, 401) // the wait is over: one more try
			a = s.post(attacker, "/api/auth/login", bad, nil)
			is.Equal(a.status, 429)
			is.Equal(a.retry, 2) // and the next wait has doubled
			is.Equal(s.post(owner, "/api/auth/login", good, nil).status, 200)
		})
	}
}

// TestLoginThrottleBehindProxy: behind a trusted proxy the client is the
// right-most untrusted X-Forwarded-For address; from an untrusted peer the
// header is ignored, so it cannot be used to dodge the throttle.
func TestLoginThrottleBehindProxy(t *testing.T) {
	is := is.New(t)
	cfg := testConfig("")
	cfg.TrustedProxies = []string{"127.0.0.1"}
	s := start(t, cfg)
	s.register("proxied@example.com")
	proxy, direct := from(t, "127.0.0.1"), from(t, "127.0.0.4")
	bad := obj{"email": "proxied@example.com", "password": "wrong password"}
	good := obj{"email": "proxied@example.com", "password": "correct horse battery"}
	// The attacker is 127.0.0.2 behind the proxy; the header's left part
	// is the attacker's to write and changes nothing.
	for i := 0; i < 5; i++ {
		xff := map[string]string{"X-Forwarded-For": fmt.Sprintf("10.9.9.%d, 127.0.0.2", i)}
		is.Equal(s.post(proxy, "/api/auth/login", bad, xff).status, 401)
	}
	is.Equal(s.post(proxy, "/api/auth/login", good, map[string]string{"X-Forwarded-For": "127.0.0.2"}).status, 429)
	// The owner behind the same proxy is another address.
	is.Equal(s.post(proxy, "/api/auth/login", good, map[string]string{"X-Forwarded-For": "127.0.0.3"}).status, 200)
	// A peer that is not a trusted proxy: its header is ignored.
	for i := 0; i < 5; i++ {
		xff := map[string]string{"X-Forwarded-For": fmt.Sprintf("127.0.0.%d", 10+i)}
		is.Equal(s.post(direct, "/api/auth/login", obj{"email": "proxied@example.com", "password": "still wrong"}, xff).status, 401)
	}
	is.Equal(s.post(direct, "/api/auth/login", good, map[string]string{"X-Forwarded-For": "127.0.0.99"}).status, 429)
}

type session struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

func (s *service) login(email string) session {
	s.t.Helper()
	var ss session
	if st := s.call("POST", "/api/auth/login", "", obj{"email": email, "password": "correct horse battery"}, &ss); st != 200 {
		s.t.Fatalf("login %s: %d", email, st)
	}
	return ss
}

// TestAccessTokenRevokedAtOnce: logout, and a refresh token's reuse,
// revoke the session's access tokens at once, though the auth cache holds
// the user; on PostgreSQL another instance refuses them too, and so does
// one started after the revocation.
func TestAccessTokenRevokedAtOnce(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			dsn := b.dsn(t)
			s := start(t, testConfig(dsn))
			s.register("revoke@example.com")

			a := s.login("revoke@example.com")
			is.Equal(s.call("GET", "/api/auth/me", a.AccessToken, nil, nil), 200) // caches the user
			is.Equal(s.call("POST", "/api/auth/logout", "", obj{"refresh_token": a.RefreshToken}, nil), 204)
			is.Equal(s.call("GET", "/api/auth/me", a.AccessToken, nil, nil), 401)

			// Reuse of a rotated refresh token revokes every access token of
			// the family, the one the thief got included.
			r1 := s.login("revoke@example.com")
			var r2 session
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": r1.RefreshToken}, &r2), 200)
			is.Equal(s.call("GET", "/api/auth/me", r2.AccessToken, nil, nil), 200)
			is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": r1.RefreshToken}, nil), 401)
			is.Equal(s.call("GET", "/api/auth/me", r2.AccessToken, nil, nil), 401)
			is.Equal(s.call("GET", "/api/auth/me", r1.AccessToken, nil, nil), 401)

			other := s.login("revoke@example.com") // another session stays
			is.Equal(s.call("GET", "/api/auth/me", other.AccessToken, nil, nil), 200)
			if dsn == "" {
				return
			}
			// Two instances on one database: revoked through the first, refused
			// by the second (NOTIFY), though it has the user cached.
			s2 := start(t, testConfig(dsn))
			c := s.login("revoke@example.com")
			is.Equal(s2.call("GET", "/api/auth/me", c.AccessToken, nil, nil), 200)
			is.Equal(s.call("POST", "/api/auth/logout", "", obj{"refresh_token": c.RefreshToken}, nil), 204)
			deadline := time.Now().Add(3 * time.Second)
			for s2.call("GET", "/api/auth/me", c.AccessToken, nil, nil) != 401 {
				if time.Now().After(deadline) {
					t.Fatal("the second instance still accepts a revoked access token after 3 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// An instance started later loads the denylist from the table.
			s3 := start(t, testConfig(dsn))
			is.Equal(s3.call("GET", "/api/auth/me", c.AccessToken, nil, nil), 401)
			is.Equal(s3.call("GET", "/api/auth/me", a.AccessToken, nil, nil), 401)
			is.Equal(s3.call("GET", "/api/auth/me", other.AccessToken, nil, nil), 200)
		})
	}
}

type invitation struct {
	ID             string  `json:"id"`
	Token          string  `json:"token"`
	Role           string  `json:"role"`
	OrganizationID *string `json:"organization_id"`
	Email          *string `json:"email"`
	Status         string  `json:"status"`
}

func (s *service) invite(cred string, body obj) invitation {
	s.t.Helper()
	var inv invitation
	if st := s.call("POST", "/api/invitations", cred, body, &inv); st != 201 || inv.Token == "" {
		s.t.Fatalf("invite %v: %d", body, st)
	}
	return inv
}

// TestRegistrationModes: closed refuses, invite needs a single-use
// invitation from an owner (into the organization, with the owner's
// choice of role) or a system administrator (a new organization).
func TestRegistrationModes(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		is := is.New(t)
		cfg := testConfig("")
		cfg.Registration = "closed"
		s := start(t, cfg)
		var e struct{ Code string }
		is.Equal(s.call("POST", "/api/auth/register", "", obj{"email": "a@example.com", "password": "long enough pw", "organization": "A"}, &e), 403)
		is.Equal(e.Code, "registration_closed")
	})
	for _, b := range backends[:2] {
		t.Run("invite/"+b.name, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig(b.dsn(t))
			cfg.Registration = "invite"
			s := start(t, cfg)
			reg := func(body obj) (int, string) {
				var e struct{ Code string }
				st := s.call("POST", "/api/auth/register", "", body, &e)
				return st, e.Code
			}
			st, code := reg(obj{"email": "walkin@example.com", "password": "long enough pw", "organization": "W"})
			is.Equal(st, 403)
			is.Equal(code, "invitation_required")
			// The configured system administrator registers to bootstrap.
			admin := s.register("admin@example.com")
			// An owner invites an editor into the organization.
			inv := s.invite(admin.token, obj{"role": "editor", "email": "Ed@Example.com"})
			is.Equal(inv.Role, "editor")
			is.Equal(*inv.OrganizationID, admin.orgID)
			st, code = reg(obj{"email": "someone@example.com", "password": "long enough pw", "invitation_token": inv.Token})
			is.Equal(st, 403)
			is.Equal(code, "invitation_email_mismatch")
			var sess struct {
				User struct {
					Role           string `json:"role"`
					OrganizationID string `json:"organization_id"`
				} `json:"user"`
			}
			is.Equal(s.call("POST", "/api/auth/register", "", obj{"email": "ed@example.com", "password": "long enough pw", "invitation_token": inv.Token}, &sess), 201)
			is.Equal(sess.User.Role, "editor")
			is.Equal(sess.User.OrganizationID, admin.orgID)
			st, code = reg(obj{"email": "ed2@example.com", "password": "long enough pw", "invitation_token": inv.Token})
			is.Equal(st, 409)
			is.Equal(code, "invitation_used")
			st, code = reg(obj{"email": "x@example.com", "password": "long enough pw", "invitation_token": "inv_nothing"})
			is.Equal(st, 400)
			is.Equal(code, "invitation_invalid")
			// Revoked: refused; revoking again is no error.
			rev := s.invite(admin.token, obj{})
			is.Equal(rev.Role, "operator") // the default: the lowest role
			is.Equal(s.call("DELETE", "/api/invitations/"+rev.ID, admin.token, nil, nil), 204)
			is.Equal(s.call("DELETE", "/api/invitations/"+rev.ID, admin.token, nil, nil), 204)
			st, code = reg(obj{"email": "late@example.com", "password": "long enough pw", "invitation_token": rev.Token})
			is.Equal(st, 409)
			is.Equal(code, "invitation_revoked")
			// A new organization: system administrators only.
			fresh := s.invite(admin.token, obj{"new_organization": true})
			is.Equal(fresh.OrganizationID, nil)
			is.Equal(s.call("POST", "/api/auth/register", "", obj{"email": "founder@example.com", "password": "long enough pw",
				"organization": "Founded", "invitation_token": fresh.Token}, &sess), 201)
			is.Equal(sess.User.Role, "owner")
			is.True(sess.User.OrganizationID != admin.orgID)
			var founder session
			is.Equal(s.call("POST", "/api/auth/login", "", obj{"email": "founder@example.com", "password": "long enough pw"}, &founder), 200)
			is.Equal(s.call("POST", "/api/invitations", founder.AccessToken, obj{"new_organization": true}, nil), 403)
			// Each organization sees its own invitations; another's is 404.
			var list struct {
				Invitations []invitation `json:"invitations"`
				Total       int          `json:"total"`
				NextCursor  *string      `json:"next_cursor"`
			}
			is.Equal(s.call("GET", "/api/invitations?page_size=1", admin.token, nil, &list), 200)
			is.Equal(list.Total, 2)
			is.Equal(len(list.Invitations), 1)
			is.True(list.NextCursor != nil)
			is.Equal(list.Invitations[0].Token, "") // never shown again
			is.Equal(s.call("GET", "/api/invitations", founder.AccessToken, nil, &list), 200)
			is.Equal(list.Total, 0)
			is.Equal(s.call("DELETE", "/api/invitations/"+inv.ID, founder.AccessToken, nil, nil), 404)
			is.Equal(s.call("POST", "/api/invitations", admin.token, obj{"expires_in_s": 5}, nil), 400)
			is.Equal(s.call("POST", "/api/invitations", admin.token, obj{"role": "boss"}, nil), 400)

			// Two registrations racing with one invitation: exactly one wins.
			race := s.invite(admin.token, obj{"role": "operator"})
			var wg sync.WaitGroup
			codes := make([]int, 4)
			for i := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i] = s.call("POST", "/api/auth/register", "", obj{"email": fmt.Sprintf("racer%d@example.com", i),
						"password": "long enough pw", "invitation_token": race.Token}, nil)
				}()
			}
			wg.Wait()
			won := 0
			for _, c := range codes {
				if c == 201 {
					won++
				} else {
					is.Equal(c, 409)
				}
			}
			is.Equal(won, 1)
		})
	}
}

// TestLoginThrottleBurst (issue 27): 20 wrong passwords sent at once from
// one address get at most the 5 free password checks (401); the others are
// refused (429), on every replica sharing the store.
func TestLoginThrottleBurst(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			s := start(t, testConfig(dsn))
			s.register("burst@example.com")
			replicas := []*service{s}
			if dsn != "" {
				replicas = append(replicas, start(t, testConfig(dsn)))
			}
			attacker := from(t, "127.0.0.2")
			bad := obj{"email": "burst@example.com", "password": "wrong password"}
			statuses := make([]int, 20)
			var wg sync.WaitGroup
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i] = replicas[i%len(replicas)].post(attacker, "/api/auth/login", bad, nil).status
				}()
			}
			wg.Wait()
			count := map[int]int{}
			for _, st := range statuses {
				count[st]++
			}
			if count[401] > 5 || count[401]+count[429] != len(statuses) {
				t.Errorf("statuses %v: want at most 5 password checks (401), the rest 429", count)
			}
		})
	}
}
