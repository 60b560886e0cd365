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
}

// Fetcher fetches documents.
type Fetcher struct {
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
	g := netguard.New(cfg.Guard)
	return &Fetcher{cfg: cfg, guard: g, tr: g.Transport(nil)}
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
		return ports.FetchedDocument{}, classify(ctx, err)
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
		return ports.FetchedDocument{}, classify(ctx, err)
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

// classify turns a client error into the port's, with a detail that names
// neither the URL nor anything sent.
func classify(ctx context.Context, err error) error {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case netguard.Forbidden(err), errors.Is(err, netguard.ErrRedirectScheme):
		return fmt.Errorf("%w: %s", ports.ErrFetchRefused, refusal(err))
	case errors.Is(err, netguard.ErrTooManyRedirects):
		return fmt.Errorf("%w: too many redirects", ports.ErrFetchFailed)
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: no complete answer in time", ports.ErrFetchTimeout)
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &dns):
		return fmt.Errorf("%w: the host name does not resolve", ports.ErrFetchFailed)
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Errorf("%w: the server could not be reached", ports.ErrFetchFailed)
	}
	return fmt.Errorf("%w: the server's answer could not be read", ports.ErrFetchFailed)
}

// refusal says why the guard refused, in words fit for the caller.
func refusal(err error) string {
	switch {
	case errors.Is(err, netguard.ErrRefusedHost):
		return "the host is a loopback name or a numeric address form other than dotted decimal"
	case errors.Is(err, netguard.ErrRedirectScheme):
		return "a redirect leads to a URL that is not http or https"
	case errors.Is(err, ssrf.ErrProhibitedPort):
		return "only ports 80 and 443 may be fetched"
	}
	return "the address is not public (loopback, private, link-local, shared, metadata or mapped addresses are refused)"
}
