package netguard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"code.dny.dev/ssrf"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/netguard"
)

// TestCheckAddr: the dial-time check on addresses. Nothing is dialled.
func TestCheckAddr(t *testing.T) {
	g := netguard.New(netguard.Options{AllowLoopbackPorts: []uint16{8081}})
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:443", false},
		{"127.0.0.1:80", false},
		{"127.8.9.10:443", false},
		{"[::1]:443", false},
		{"169.254.169.254:80", false}, // cloud metadata
		{"169.254.1.1:443", false},    // link-local
		{"0.0.0.0:443", false},
		{"100.64.0.1:443", false}, // CGNAT
		{"100.127.255.254:443", false},
		{"10.0.0.1:443", false},
		{"10.255.1.2:80", false},
		{"172.16.0.1:443", false},
		{"192.168.1.1:443", false},
		{"[::ffff:127.0.0.1]:443", false}, // IPv4-mapped IPv6
		{"[::ffff:10.0.0.1]:443", false},
		{"[::ffff:93.184.216.34]:443", false},
		{"[fe80::1]:443", false},
		{"[fc00::1]:443", false},
		{"[::]:443", false},
		{"255.255.255.255:443", false},
		{"224.0.0.1:443", false},
		{"93.184.216.34:443", true}, // public
		{"93.184.216.34:80", true},
		{"93.184.216.34:8080", false}, // public, but not 80 or 443
		{"[2606:4700::1111]:443", true},
		// The test-only loopback allowance: its port only, never mapped forms.
		{"127.0.0.1:8081", true},
		{"[::1]:8081", true},
		{"127.0.0.1:8082", false},
		{"[::ffff:127.0.0.1]:8081", false},
		{"10.0.0.1:8081", false},
	} {
		err := g.CheckAddr(netip.MustParseAddrPort(tt.addr))
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want allowed %v", tt.addr, err, tt.ok)
		}
		if err != nil && !netguard.Forbidden(err) {
			t.Errorf("%s: %v is not a guard refusal", tt.addr, err)
		}
	}
}

// TestDialRefusesHostForms: loopback names and numeric forms other than
// dotted decimal are refused before any lookup (the resolver is never
// asked), IP literals by the address check.
func TestDialRefusesHostForms(t *testing.T) {
	var lookups atomic.Int64
	g := netguard.New(netguard.Options{Resolve: func(context.Context, string) ([]netip.Addr, error) {
		lookups.Add(1)
		return nil, errors.New("no lookups in this test")
	}})
	for _, host := range []string{
		"2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "0177.1", "017700000001", "10.1",
		"localhost", "LOCALHOST.", "api.localhost", "1.2.3.0x4",
		"127.0.0.1", "127.0.0.1.", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "169.254.169.254", "0.0.0.0", "100.64.0.1", "10.0.0.8",
	} {
		for _, port := range []string{"80", "443"} {
			_, err := g.DialContext(context.Background(), "tcp", host+":"+port)
			if err == nil || !netguard.Forbidden(err) {
				t.Errorf("%s:%s: err %v, want a refusal", host, port, err)
			}
		}
	}
	if n := lookups.Load(); n != 0 {
		t.Errorf("%d lookups, want none", n)
	}
}

// TestDialChecksResolvedAddresses: a name that resolves to a private
// address is refused after the lookup; nothing is dialled.
func TestDialChecksResolvedAddresses(t *testing.T) {
	is := is.New(t)
	table := map[string][]netip.Addr{
		"internal.example.com": {netip.MustParseAddr("10.1.2.3")},
		"meta.example.com":     {netip.MustParseAddr("169.254.169.254")},
		"mixed.example.com":    {netip.MustParseAddr("192.168.0.1"), netip.MustParseAddr("::1")},
		"cgnat.example.com":    {netip.MustParseAddr("100.64.0.1")},
	}
	var asked []string
	g := netguard.New(netguard.Options{Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
		asked = append(asked, host)
		return table[host], nil
	}})
	for host := range table {
		_, err := g.DialContext(context.Background(), "tcp", host+":443")
		is.True(errors.Is(err, ssrf.ErrProhibitedIP))
	}
	is.Equal(len(asked), len(table)) // each name was looked up, then refused
}

// TestDialTriesAllowedAddresses: of a name's addresses, the refused ones
// are skipped and an allowed one is dialled (here a loopback test server,
// allowed on its port for the test).
func TestDialTriesAllowedAddresses(t *testing.T) {
	is := is.New(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	p := port(t, srv.URL)
	g := netguard.New(netguard.Options{AllowLoopbackPorts: []uint16{p}, Resolve: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.9.9.9"), netip.MustParseAddr("127.0.0.1")}, nil
	}})
	hc := &http.Client{Transport: g.Transport(nil)}
	resp, err := hc.Get("http://api.example.com:" + strconv.Itoa(int(p)) + "/")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(hits.Load(), int64(1))
}

// TestRedirectToLoopbackIsRefused: the first server is allowed (its port),
// and redirects to another loopback server, which must see no request;
// likewise a redirect to a numeric form, to a metadata address, and past
// the redirect limit.
func TestRedirectToLoopbackIsRefused(t *testing.T) {
	is := is.New(t)
	var reached atomic.Int64
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer inner.Close()
	ip := strconv.Itoa(int(port(t, inner.URL)))
	var target atomic.Value
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/loop" {
			http.Redirect(w, r, "/loop", http.StatusFound)
			return
		}
		http.Redirect(w, r, target.Load().(string), http.StatusFound)
	}))
	defer outer.Close()
	hc := netguard.NewClient(netguard.Options{AllowLoopbackPorts: []uint16{port(t, outer.URL)}}, nil, 3)
	for _, to := range []string{inner.URL + "/x", "http://localhost:" + ip + "/", "http://2130706433:" + ip + "/",
		"http://[::1]:" + ip + "/", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:127.0.0.1]:" + ip + "/",
		"file:///etc/passwd"} {
		target.Store(to)
		resp, err := hc.Get(outer.URL + "/start")
		if resp != nil {
			resp.Body.Close()
		}
		is.True(err != nil)
		is.True(netguard.Forbidden(err) || errors.Is(err, netguard.ErrRedirect))
	}
	resp, err := hc.Get(outer.URL + "/loop")
	if resp != nil {
		resp.Body.Close()
	}
	is.True(errors.Is(err, netguard.ErrRedirect))
	is.Equal(reached.Load(), int64(0))
}

func port(t *testing.T, raw string) uint16 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return uint16(p)
}
