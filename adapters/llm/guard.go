package llm

import (
	"fmt"
	"net/http"

	"code.dny.dev/ssrf"

	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/ports"
)

// ErrForbiddenDestination means a customer-supplied provider URL led to an
// address the SSRF guard refuses (loopback, private, link-local, metadata,
// or a port other than 80 and 443). It is a ports.ErrDestinationRefused.
var ErrForbiddenDestination = fmt.Errorf("provider address refused: customer endpoints must be public and on port 80 or 443: %w", ports.ErrDestinationRefused)

// maxRedirects bounds the redirects a guarded client follows.
const maxRedirects = 5

// GuardedHTTPClient returns the HTTP client for provider URLs that come from
// customers rather than from the server's operators: adapters/netguard's
// client, which checks every connection (redirects included) at dial time,
// after DNS resolution. opts adjust the guard (tests allow a loopback test
// server).
func GuardedHTTPClient(opts ...ssrf.Option) *http.Client {
	return netguard.NewClient(netguard.Options{SSRF: opts}, defaultTransport(), maxRedirects)
}

// forbidden reports whether err is the SSRF guard's refusal.
func forbidden(err error) bool { return netguard.Forbidden(err) }
