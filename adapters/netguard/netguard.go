// Package netguard is the SSRF-safe HTTP client for URLs that come from
// customers (their LLM provider endpoints, the URL a batch is fetched
// from). Every connection is checked at dial time, after DNS resolution, by
// code.dny.dev/ssrf, so a name that resolves (or re-resolves) to a private
// address is refused, and so is every redirect hop. It is a library shared
// by the adapters that send such requests: it imports no package of ours.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// ErrRefusedHost means a host name was refused before any lookup: a
// localhost name, or a numeric form of an address other than dotted
// decimal (2130706433, 0177.0.0.1, 0x7f.1, 127.1), which resolvers read in
// different ways.
var ErrRefusedHost = errors.New("host refused")

// ErrUnresolved means a host name did not resolve, or resolved to no
// address. It is a refusal like a private address (Forbidden), so that
// callers answer both alike: a caller who could tell "does not resolve"
// from "not public" could probe which names exist on the internal network.
// The resolver's own error stays in the chain, for the server's logs.
var ErrUnresolved = errors.New("host does not resolve")

// ErrRedirect means a redirect was refused: ErrTooManyRedirects or
// ErrRedirectScheme.
var ErrRedirect = errors.New("redirect refused")

// ErrTooManyRedirects and ErrRedirectScheme (a scheme other than http and
// https) are the refused redirects.
var (
	ErrTooManyRedirects = fmt.Errorf("%w: too many redirects", ErrRedirect)
	ErrRedirectScheme   = fmt.Errorf("%w: not an http or https URL", ErrRedirect)
)

// Options adjust a guard. The zero value is the strict guard: public
// addresses on ports 80 and 443 only.
type Options struct {
	// SSRF adjusts code.dny.dev/ssrf's guardian (ports, extra prefixes).
	SSRF []ssrf.Option
	// AllowLoopbackPorts lets connections to loopback addresses
	// (127.0.0.0/8, ::1) on these ports through. For operators' tests only;
	// it is never a default.
	AllowLoopbackPorts []uint16
	// Resolve looks a host name up; nil uses net.DefaultResolver. Tests
	// give a fixed table, so that no query leaves the machine.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// DialTimeout bounds one connection attempt (default 10 s).
	DialTimeout time.Duration
}

// Guard checks and dials addresses.
type Guard struct {
	g       *ssrf.Guardian
	loop    []uint16
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	dialer  *net.Dialer
}

// New returns a Guard for o.
func New(o Options) *Guard {
	g := &Guard{g: ssrf.New(o.SSRF...), loop: o.AllowLoopbackPorts, resolve: o.Resolve}
	if g.resolve == nil {
		g.resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	timeout := o.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	g.dialer = &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
	return g
}

// CheckAddr decides whether a connection to ap may be made.
func (g *Guard) CheckAddr(ap netip.AddrPort) error {
	a := ap.Addr()
	switch {
	case a.Zone() != "":
		return fmt.Errorf("%w: %s has an IPv6 zone", ssrf.ErrProhibitedIP, a)
	case a.Is4In6():
		return fmt.Errorf("%w: %s is an IPv4-mapped IPv6 address", ssrf.ErrProhibitedIP, a)
	case a.IsLoopback() && slices.Contains(g.loop, ap.Port()):
		return nil
	}
	return g.g.SafeAddrPort(ap)
}

// control is the dialer's last check, on the very address it connects to.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: %s is not a permitted network type", ssrf.ErrProhibitedNetwork, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: could not parse %s", ssrf.ErrInvalidHostPort, address)
	}
	return g.CheckAddr(ap)
}

// CheckHost refuses host names that must not be looked up (ErrRefusedHost).
func CheckHost(host string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s is a loopback name", ErrRefusedHost, host)
	}
	labels := strings.Split(h, ".")
	if numericLabel(labels[len(labels)-1]) {
		// A numeric last label makes the host an IPv4 address to URL
		// parsers and C resolvers (WHATWG URL, inet_aton), in forms Go's
		// own parser refuses: refuse them all.
		return fmt.Errorf("%w: %s is not a dotted-decimal address", ErrRefusedHost, host)
	}
	return nil
}

func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") {
		return strings.Trim(l[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// Check refuses a host and port that DialContext would refuse, without
// connecting: a refused name, a name that does not resolve, or an address
// (any of the name's) that is not allowed. Checking a URL when it is saved
// tells its owner at once; DialContext still checks every connection.
func (g *Guard) Check(ctx context.Context, host string, port uint16) error {
	if err := CheckHost(host); err != nil {
		return err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = g.resolve(ctx, host); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnresolved, host, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%w: %s has no address", ErrUnresolved, host)
	}
	for _, a := range addrs {
		if err := g.CheckAddr(netip.AddrPortFrom(a, port)); err != nil {
			return err
		}
	}
	return nil
}

// DialContext resolves addr's host, checks every address and connects to
// the first allowed one that answers.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ssrf.ErrInvalidHostPort, addr)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ssrf.ErrInvalidHostPort, addr)
	}
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = g.resolve(ctx, host); err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller gave up: not the name's fault
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrUnresolved, host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrUnresolved, host)
	}
	var first error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		if err := g.CheckAddr(ap); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		c, err := g.dialer.DialContext(ctx, network, ap.String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// CheckRedirect returns a redirect policy: at most max hops, to http and
// https only. Each hop dials through the guard like the first request.
func CheckRedirect(max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, max)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: a redirect to a %s URL", ErrRedirectScheme, req.URL.Scheme)
		}
		return nil
	}
}

// Transport returns base (nil: a clone of http.DefaultTransport) dialing
// through g, without proxies from the environment (they would dial on the
// guard's behalf).
func (g *Guard) Transport(base *http.Transport) *http.Transport {
	t := base
	if t == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
	}
	t.Proxy = nil
	t.DialContext = g.DialContext
	t.DialTLSContext = nil
	return t
}

// NewClient returns an HTTP client through a guard for o, following at most
// maxRedirects redirects.
func NewClient(o Options, base *http.Transport, maxRedirects int) *http.Client {
	return &http.Client{Transport: New(o).Transport(base), CheckRedirect: CheckRedirect(maxRedirects)}
}

// Forbidden reports whether err is a refusal of the guard (an address, a
// port, a network, a host name, a name that does not resolve), as opposed
// to a failure of the destination. Callers tell clients no more than that:
// which rule refused is for the server's logs (see ErrUnresolved).
func Forbidden(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedPort) ||
		errors.Is(err, ssrf.ErrProhibitedNetwork) || errors.Is(err, ssrf.ErrInvalidHostPort) ||
		errors.Is(err, ErrRefusedHost) || errors.Is(err, ErrUnresolved)
}
