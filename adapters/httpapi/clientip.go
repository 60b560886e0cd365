package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses ENRICH_TRUSTED_PROXIES: IP addresses and CIDR
// prefixes.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// clientAddrs finds a request's client address.
type clientAddrs struct{ trusted []netip.Prefix }

func (c clientAddrs) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// of returns the client's address: the connection's peer, unless the peer
// is a trusted proxy; then the right-most address of X-Forwarded-For that
// is not a trusted proxy (each trusted proxy appends the peer it saw, so
// what lies left of the first untrusted hop is the client's to write and is
// not believed). When every hop is trusted, the left-most; when a hop does
// not parse, the last trusted hop before it.
func (c clientAddrs) of(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || len(c.trusted) == 0 || !c.isTrusted(peer) {
		return host
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer.Unmap()
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = a.Unmap()
		if !c.isTrusted(client) {
			break
		}
	}
	return client.String()
}
