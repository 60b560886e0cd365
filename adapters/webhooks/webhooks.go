// Package webhooks is the ports.WebhookSender: signed notifications POSTed
// to customers' URLs through adapters/netguard's SSRF-safe client. A URL
// whose host is not public is refused before any connection (loopback
// ports only when the operator's tests allow them), redirects are not
// followed (a 3xx answer is a failed attempt), and each attempt is bounded
// in time.
package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.WebhookSender = (*Sender)(nil)

// DefaultTimeout bounds one attempt, connection and answer included.
const DefaultTimeout = 10 * time.Second

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// Config sets the sender's guard and time limit.
type Config struct {
	// Guard adjusts the SSRF guard (ENRICH_WEBHOOK_ALLOW_LOOPBACK_PORTS).
	Guard netguard.Options
	// Timeout bounds one attempt; 0: DefaultTimeout.
	Timeout time.Duration
	// Log receives, at debug level, why the guard refused a URL.
	Log *slog.Logger
}

// Sender posts notifications.
type Sender struct {
	guard  *netguard.Guard
	client *http.Client
	log    *slog.Logger
}

// New returns a Sender for cfg.
func New(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	lg := cfg.Log
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	g := netguard.New(cfg.Guard)
	return &Sender{guard: g, log: lg, client: &http.Client{Transport: g.Transport(nil), Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Refused is what a client is told of every refused URL (the precise rule
// goes to the server's log only, so that nobody probes the internal
// network through it).
const Refused = "must be an http or https URL whose host resolves to a public address, on port 80 or 443"

// CheckURL refuses a URL that Send would not deliver to.
func (s *Sender) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > MaxURLLength:
		return fmt.Errorf("%w: longer than %d characters", ports.ErrWebhookRefused, MaxURLLength)
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Opaque != "":
		return fmt.Errorf("%w: %s", ports.ErrWebhookRefused, Refused)
	case u.User != nil:
		return fmt.Errorf("%w: credentials in the URL are not allowed", ports.ErrWebhookRefused)
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fmt.Errorf("%w: %s", ports.ErrWebhookRefused, Refused)
		}
		port = uint16(n)
	}
	if err := s.guard.Check(ctx, u.Hostname(), port); err != nil {
		s.log.DebugContext(ctx, "webhook URL refused", "err", err)
		return fmt.Errorf("%w: %s", ports.ErrWebhookRefused, Refused)
	}
	return nil
}

// Send posts r once.
func (s *Sender) Send(ctx context.Context, r ports.WebhookRequest) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return fmt.Errorf("%w: the URL cannot be requested", ports.ErrWebhookRefused)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "enrich-webhook/1")
	req.Header.Set(webhook.EventIDHeader, r.EventID)
	req.Header.Set(webhook.EventHeader, string(r.Event))
	req.Header.Set(webhook.SignatureHeader, r.Signature)
	resp, err := s.client.Do(req)
	if err != nil {
		return s.classify(ctx, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhooks: the receiver answered %s", resp.Status)
	}
	return nil
}

func (s *Sender) classify(ctx context.Context, err error) error {
	var op *net.OpError
	switch {
	case netguard.Forbidden(err):
		s.log.DebugContext(ctx, "webhook refused", "err", err)
		return fmt.Errorf("%w: %s", ports.ErrWebhookRefused, Refused)
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("webhooks: no answer in time")
	case errors.As(err, &op) && op.Op == "dial":
		return errors.New("webhooks: the receiver could not be reached")
	}
	return errors.New("webhooks: the request failed")
}
