package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"detail and code", 404, `{"detail":"schema not found","code":"not_found"}`, "schema not found (code not_found, HTTP 404)"},
		{"field", 400, `{"detail":"bad","code":"invalid_request","field":"models.0"}`, "bad (code invalid_request, field models.0, HTTP 400)"},
		{"not JSON", 502, "upstream down", "upstream down (HTTP 502)"},
		{"empty", 500, "", "Internal Server Error (HTTP 500)"},
		{"401 without code", 401, `{"detail":"missing credentials"}`, "missing credentials (code unauthenticated, HTTP 401)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			err := api.New(srv.URL, nil).Do(context.Background(), "GET", "/x", nil, nil)
			var e *api.Error
			is.True(errors.As(err, &e))
			is.Equal(e.Status, tt.status)
			is.Equal(err.Error(), tt.want)
		})
	}
}

// TestSessionRefresh: an expired access token is refreshed (the refresh
// token rotates and the new tokens are stored), and a refused refresh says
// to log in again.
func TestSessionRefresh(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	access, refresh := "a1", "r1"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/auth/refresh":
			var body struct {
				RefreshToken string `json:"refresh_token"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			if body.RefreshToken != refresh {
				w.WriteHeader(401)
				fmt.Fprint(w, `{"detail":"refresh token reused","code":"unauthenticated"}`)
				return
			}
			access, refresh = access+"+", refresh+"+"
			fmt.Fprintf(w, `{"access_token":%q,"refresh_token":%q,"expires_in":900}`, access, refresh)
		default:
			if r.Header.Get("Authorization") != "Bearer "+access {
				w.WriteHeader(401)
				fmt.Fprint(w, `{"detail":"token expired","code":"unauthenticated"}`)
				return
			}
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "enrich", "session.json")
	var tok api.Tokens
	tok.AccessToken, tok.RefreshToken, tok.ExpiresIn = "a0", "r1", 900 // a0: the server no longer takes it
	s := api.NewSession(path, srv.URL, tok)
	is.NoErr(s.Save())
	st, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(st.Mode().Perm(), os.FileMode(0o600))
	dir, err := os.Stat(filepath.Dir(path))
	is.NoErr(err)
	is.Equal(dir.Mode().Perm(), os.FileMode(0o700))

	c := api.New(srv.URL, s)
	var out struct{ OK bool }
	is.NoErr(c.Do(context.Background(), "GET", "/api/auth/me", nil, &out)) // 401, refresh, retry
	is.True(out.OK)
	stored, err := api.LoadSession(path)
	is.NoErr(err)
	is.Equal(stored.AccessToken, "a1+")
	is.Equal(stored.RefreshToken, "r1+") // rotated and kept

	mu.Lock()
	access, refresh = "other", "other" // the session was revoked
	mu.Unlock()
	err = c.Do(context.Background(), "GET", "/api/auth/me", nil, nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "log in again"))
}

// TestFollowResumes: a stream that drops is resumed with Last-Event-ID and
// every event is seen once, up to the terminal one.
func TestFollowResumes(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 { // two events, then the connection drops
			fmt.Fprint(w, "id: 1\ndata: {\"event\":\"model_started\",\"total_expertises\":2}\n\n")
			fmt.Fprint(w, ": heartbeat\n\n")
			fmt.Fprint(w, "id: 2\ndata: {\"event\":\"attempt\",\"attempt\":1}\n\n")
			return
		}
		fmt.Fprint(w, "id: 3\ndata: {\"event\":\"completed\",\"record_id\":\"r\"}\n\n")
		fmt.Fprint(w, "id: 4\ndata: {\"event\":\"never read\"}\n\n")
	}))
	defer srv.Close()
	var got []string
	err := api.New(srv.URL, api.Key("ent_x")).Follow(context.Background(), "j", "", func(e api.Event) error {
		got = append(got, e.ID+":"+e.Name)
		return nil
	})
	is.NoErr(err)
	is.Equal(got, []string{"1:model_started", "2:attempt", "3:completed"})
	is.Equal(lastIDs, []string{"", "2"})
}

func TestFollowGivesUp(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"detail":"job not found","code":"not_found"}`)
	}))
	defer srv.Close()
	err := api.New(srv.URL, api.Key("ent_x")).Follow(context.Background(), "j", "", func(api.Event) error { return nil })
	var e *api.Error
	is.True(errors.As(err, &e))
	is.Equal(e.Code, "not_found")
}

// TestFilesAfterRefresh: a multipart upload refused for an expired token is
// made again, files read anew, after the refresh; a file that cannot be
// read ends the request with an error rather than a short body.
func TestFilesAfterRefresh(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var got []string // "field filename content" of each part of the accepted upload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/api/auth/refresh":
			fmt.Fprint(w, `{"access_token":"a1","refresh_token":"r2","expires_in":900}`)
		case r.Header.Get("Authorization") != "Bearer a1":
			w.WriteHeader(401)
			fmt.Fprint(w, `{"detail":"token expired","code":"unauthenticated"}`)
		default:
			mr, err := r.MultipartReader()
			is.NoErr(err)
			for {
				p, err := mr.NextPart()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					w.WriteHeader(400)
					return
				}
				b, _ := io.ReadAll(p)
				got = append(got, p.FormName()+" "+p.FileName()+" "+string(b))
			}
			fmt.Fprint(w, `[]`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.md")
	is.NoErr(os.WriteFile(a, []byte("alpha"), 0o600))
	is.NoErr(os.WriteFile(b, []byte("beta"), 0o600))
	var tok api.Tokens
	tok.AccessToken, tok.RefreshToken, tok.ExpiresIn = "a0", "r1", 900
	c := api.New(srv.URL, api.NewSession(filepath.Join(dir, "session.json"), srv.URL, tok))

	resp, err := c.Open(context.Background(), "POST", "/api/attachments", api.Files("files", []string{a, b}))
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(got, []string{"files a.txt alpha", "files b.md beta"})

	mu.Lock()
	got = nil
	mu.Unlock()
	_, err = c.Open(context.Background(), "POST", "/api/attachments", api.Files("files", []string{a, filepath.Join(dir, "gone")}))
	is.True(err != nil) // the body ends in the error: the server never sees a complete upload
	is.True(strings.Contains(err.Error(), "gone: no such file or directory"))
	is.True(!strings.Contains(err.Error(), "cannot reach")) // not blamed on the network
}
