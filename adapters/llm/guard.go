package llm

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"code.dny.dev/ssrf"
)

// ErrForbiddenDestination means a customer-supplied provider URL led to an
// address the SSRF guard refuses (loopback, private, link-local, metadata,
// or a port other than 80 and 443).
var ErrForbiddenDestination = errors.New("provider address refused: customer endpoints must be public and on port 80 or 443")

// maxRedirects bounds the redirects a guarded client follows.
const maxRedirects = 5

// GuardedHTTPClient returns the HTTP client for provider URLs that come from
// customers rather than from the server's operators. Every connection is
// checked by code.dny.dev/ssrf at dial time, after DNS resolution, so a
// name that resolves (or re-resolves) to a private address is refused, and
// so is every redirect hop, which dials through the same check. Proxies
// from the environment are not used (they would dial on the guard's
// behalf). opts adjust the guard (tests allow a loopback test server).
func GuardedHTTPClient(opts ...ssrf.Option) *http.Client {
	g := ssrf.New(opts...)
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Safe}
	t := defaultTransport()
	t.Proxy = nil
	t.DialContext = d.DialContext
	return &http.Client{Transport: t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return fmt.Errorf("redirect to a %s URL refused", req.URL.Scheme)
		}
		return nil
	}}
}

// forbidden reports whether err is the SSRF guard's refusal.
func forbidden(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedPort) ||
		errors.Is(err, ssrf.ErrProhibitedNetwork) || errors.Is(err, ssrf.ErrInvalidHostPort)
}
