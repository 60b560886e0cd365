// Package urlfetch is the ports.EntityFetcher: one GET of a customer's URL
// through adapters/netguard's SSRF-safe client, within size, time and
// redirect limits, with the request's authentication. Secrets are sent only
// to the URL's own host (they are dropped on a redirect elsewhere) and never
// appear in errors or logs.
package urlfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"code.dny.dev/ssrf"

	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/domain/fetch"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.EntityFetcher = (*Fetcher)(nil)

// Defaults of Config.
const (
	DefaultMaxBytes     = 10 << 20
	DefaultTimeout      = 15 * time.Second
	DefaultMaxRedirects = 3
)

// Config sets the fetcher's limits and guard.
type Config struct {
	// MaxBytes bounds the document (after decompression); 0: 10 MiB.
	MaxBytes int64
	// Timeout bounds the whole fetch, redirects and body included; 0: 15 s.
	Timeout time.Duration
	// MaxRedirects bounds the redirects followed; 0: 3 (negative: none).
	MaxRedirects int
	// Guard adjusts the SSRF guard (tests allow a loopback port).
	Guard netguard.Options
	// Log receives, at debug level, why the guard refused a URL (clients
	// are told only Refused); nil: nowhere.
	Log *slog.Logger
}

// Fetcher fetches documents.
type Fetcher struct {
	log   *slog.Logger
	cfg   Config
	guard *netguard.Guard
	tr    *http.Transport
}

// New returns a Fetcher for cfg.
func New(cfg Config) *Fetcher {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0
	}
	lg := cfg.Log
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	g := netguard.New(cfg.Guard)
	return &Fetcher{log: lg, cfg: cfg, guard: g, tr: g.Transport(nil)}
}

// Fetch GETs req.URL.
func (f *Fetcher) Fetch(ctx context.Context, req ports.FetchRequest) (ports.FetchedDocument, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return ports.FetchedDocument{}, fmt.Errorf("%w: the URL cannot be requested", ports.ErrFetchFailed)
	}
	hr.Header.Set("Accept", "application/json, application/x-ndjson, text/csv;q=0.9, */*;q=0.5")
	hr.Header.Set("User-Agent", "enrich-batch-fetch/1")
	secret := authorize(hr, req.Auth)
	origin := hr.URL.Host
	policy := netguard.CheckRedirect(f.cfg.MaxRedirects)
	hc := &http.Client{Transport: f.tr, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if err := policy(r, via); err != nil {
			return err
		}
		if r.URL.Host != origin {
			// The secrets were for the URL's host only.
			for _, h := range secret {
				r.Header.Del(h)
			}
		}
		return nil
	}}
	resp, err := hc.Do(hr)
	if err != nil {
		return ports.FetchedDocument{}, f.classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return ports.FetchedDocument{}, fmt.Errorf("%w: the server answered %s", ports.ErrFetchFailed, resp.Status)
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return ports.FetchedDocument{}, fmt.Errorf("%w: %d bytes, the limit is %d", ports.ErrFetchTooLarge, resp.ContentLength, f.cfg.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBytes+1))
	if err != nil {
		return ports.FetchedDocument{}, f.classify(ctx, err)
	}
	if int64(len(body)) > f.cfg.MaxBytes {
		return ports.FetchedDocument{}, fmt.Errorf("%w: more than %d bytes", ports.ErrFetchTooLarge, f.cfg.MaxBytes)
	}
	return ports.FetchedDocument{Body: body, ContentType: resp.Header.Get("Content-Type")}, nil
}

// authorize sets the request's authentication and returns the headers
// that carry secrets.
func authorize(r *http.Request, a ports.FetchAuth) []string {
	switch a.Type {
	case fetch.AuthBearer:
		r.Header.Set("Authorization", "Bearer "+a.BearerToken.Reveal())
		return []string{"Authorization"}
	case fetch.AuthBasic:
		r.SetBasicAuth(a.Username, a.Password.Reveal())
		return []string{"Authorization"}
	case fetch.AuthAPIKey:
		name := a.HeaderName
		if name == "" {
			name = fetch.DefaultAPIKeyHeader
		}
		r.Header.Set(name, a.HeaderValue.Reveal())
		return []string{name}
	}
	return nil
}

// Refused is the one reason a client is given for every refusal of the
// address: a name that does not resolve, a loopback name, an address that
// is not public, a port other than 80 and 443. Telling them apart would let
// a caller probe the internal network's names (which resolve, to what); the
// precise reason goes to the server's log only.
const Refused = "the host must resolve to a public address, on port 80 or 443 (names that do not resolve, loopback names, and loopback, private, link-local, shared, metadata or mapped addresses are refused)"

// classify turns a client error into the port's, with a detail that names
// neither the URL nor anything sent.
func (f *Fetcher) classify(ctx context.Context, err error) error {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, netguard.ErrRedirectScheme):
		return fmt.Errorf("%w: a redirect leads to a URL that is not http or https", ports.ErrFetchRefused)
	case netguard.Forbidden(err), errors.As(err, &dns) && ctx.Err() == nil:
		f.log.DebugContext(ctx, "batch fetch refused", "reason", reason(err))
		return fmt.Errorf("%w: %s", ports.ErrFetchRefused, Refused)
	case errors.Is(err, netguard.ErrTooManyRedirects):
		return fmt.Errorf("%w: too many redirects", ports.ErrFetchFailed)
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: no complete answer in time", ports.ErrFetchTimeout)
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("%w: the server could not be reached", ports.ErrFetchFailed)
	}
	return fmt.Errorf("%w: the server's answer could not be read", ports.ErrFetchFailed)
}

// reason names the rule that refused, for the server's log (never a
// client's answer).
func reason(err error) string {
	var dns *net.DNSError
	switch {
	case errors.Is(err, netguard.ErrUnresolved), errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, netguard.ErrRefusedHost):
		return "a loopback name or a numeric address form other than dotted decimal"
	case errors.Is(err, ssrf.ErrProhibitedPort):
		return "a port other than the allowed ones"
	}
	return "an address that is not public"
}
