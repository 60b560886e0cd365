package netguard_test

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/entityenrich/enrich/adapters/netguard"
)

// atonV4 reads s the way C's inet_aton does: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last filling the remaining
// bytes. It reports whether s is an IPv4 address to such a reader.
func atonV4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return false
	}
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" && base != 16 {
			return false
		}
		if p == "" {
			p = "0"
		}
		v, err := strconv.ParseUint(p, base, 64)
		if err != nil {
			return false
		}
		if i < len(parts)-1 && v > 255 {
			return false
		}
	}
	return true
}

// FuzzCheckHost: a host that a C resolver or URL parser would read as an
// IPv4 address is either an address Go reads the same way (then the
// address check decides) or refused before any lookup.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"2130706433", "0177.0.0.1", "0x7f.1", "127.1", "127.0.0.1", "example.com", "1e100.net",
		"0x", "08.1", "localhost", "a.localhost.", "1.2.3.4.5", "::1", "0X7F.0.0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		err := netguard.CheckHost(host)
		if !atonV4(host) {
			return
		}
		if _, perr := netip.ParseAddr(host); perr == nil {
			return // dotted decimal: the address check decides
		}
		if err == nil {
			t.Fatalf("CheckHost(%q) accepted a numeric address form", host)
		}
	})
}

func TestCheckHost(t *testing.T) {
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"api.example.com", true},
		{"1e100.net", true},
		{"10.0.0.1", true}, // dotted decimal: left to the address check
		{"::1", true},
		{"2130706433", false},
		{"0177.0.0.1", false},
		{"0X7F.0.0.1", false},
		{"127.1", false},
		{"localhost", false},
		{"Api.LocalHost.", false},
	} {
		if err := netguard.CheckHost(tt.host); (err == nil) != tt.ok {
			t.Errorf("CheckHost(%q): %v, want ok %v", tt.host, err, tt.ok)
		}
	}
}
