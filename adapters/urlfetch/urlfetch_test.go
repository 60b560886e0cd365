package urlfetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/adapters/urlfetch"
	"github.com/entityenrich/enrich/domain/fetch"
	"github.com/entityenrich/enrich/ports"
)

// TestFetchLimits: the size, time and redirect limits, against a loopback
// server the test allows.
func TestFetchLimits(t *testing.T) {
	is := is.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("[" + strings.Repeat(`{"a":1},`, 200) + `{"a":1}]`))
		case "/big-chunked":
			w.(http.Flusher).Flush() // no Content-Length
			_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		case "/hop":
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			if n > 0 {
				http.Redirect(w, r, "/hop?n="+strconv.Itoa(n-1), http.StatusFound)
				return
			}
			_, _ = w.Write([]byte(`[]`))
		case "/echo-auth":
			_, _ = w.Write([]byte(`[{"auth":"` + r.Header.Get("Authorization") + `"}]`))
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	p, _ := strconv.Atoi(u.Port())
	f := urlfetch.New(urlfetch.Config{MaxBytes: 1000, Timeout: 100 * time.Millisecond,
		Guard: netguard.Options{AllowLoopbackPorts: []uint16{uint16(p)}}})
	ctx := context.Background()
	_, err := f.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/big"})
	is.True(errors.Is(err, ports.ErrFetchTooLarge))
	_, err = f.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/big-chunked"})
	is.True(errors.Is(err, ports.ErrFetchTooLarge))
	_, err = f.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/slow"})
	is.True(errors.Is(err, ports.ErrFetchTimeout))
	doc, err := f.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/hop?n=3"})
	is.NoErr(err) // 3 redirects are fine
	is.Equal(string(doc.Body), `[]`)
	_, err = f.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/hop?n=4"})
	is.True(errors.Is(err, ports.ErrFetchFailed))
	doc, err = f.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/echo-auth",
		Auth: ports.FetchAuth{Type: fetch.AuthBearer, BearerToken: "tok-123"}})
	is.NoErr(err)
	is.Equal(string(doc.Body), `[{"auth":"Bearer tok-123"}]`)
	// The same server on a port the guard does not allow is refused.
	strict := urlfetch.New(urlfetch.Config{})
	_, err = strict.Fetch(ctx, ports.FetchRequest{URL: srv.URL + "/hop?n=0"})
	is.True(errors.Is(err, ports.ErrFetchRefused))
	is.True(!strings.Contains(err.Error(), srv.URL)) // the detail does not name the URL
}
