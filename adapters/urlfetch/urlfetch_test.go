package urlfetch_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
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
			time.Sleep(3 * time.Second)
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
	f := urlfetch.New(urlfetch.Config{MaxBytes: 1000, Timeout: time.Second,
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

// TestRefusalsLookAlike: a name that does not resolve, one that resolves
// to no address, one that resolves to a private address, a private
// address on another port, a loopback name and address literals all get
// the same refusal, word for word: a caller cannot tell which names exist
// inside. The resolver is the test's table; nothing is looked up.
func TestRefusalsLookAlike(t *testing.T) {
	is := is.New(t)
	table := map[string][]netip.Addr{
		"intranet.corp.test": {netip.MustParseAddr("10.1.2.3")},
		"meta.corp.test":     {netip.MustParseAddr("169.254.169.254")},
		"empty.corp.test":    {},
	}
	var lookups []string
	f := urlfetch.New(urlfetch.Config{Timeout: 2 * time.Second, Guard: netguard.Options{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			lookups = append(lookups, host)
			if a, ok := table[host]; ok {
				return a, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}}})
	var first string
	for _, u := range []string{
		"http://nowhere.corp.test/list.json",  // does not resolve
		"https://nowhere.corp.test:8443/x",    // does not resolve, another port
		"http://empty.corp.test/list.json",    // resolves to nothing
		"http://intranet.corp.test/list.json", // private
		"http://intranet.corp.test:8080/x",    // private, another port
		"http://meta.corp.test/latest",        // metadata
		"http://10.1.2.3/list.json",           // a private literal
		"http://127.0.0.1:8080/list.json",     // loopback, another port
		"http://localhost/list.json",          // a loopback name
		"http://[::1]/list.json",              // loopback IPv6
	} {
		_, err := f.Fetch(context.Background(), ports.FetchRequest{URL: u})
		is.True(errors.Is(err, ports.ErrFetchRefused)) // every one a refusal
		if first == "" {
			first = err.Error()
		}
		is.Equal(err.Error(), first) // the same words for every cause
		is.True(!strings.Contains(err.Error(), "corp.test"))
	}
	is.Equal(first, ports.ErrFetchRefused.Error()+": "+urlfetch.Refused)
	is.True(len(lookups) > 0) // the names went to the test's resolver only
}
