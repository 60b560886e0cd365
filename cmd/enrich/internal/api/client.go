package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Error is an error answer of the server: {"detail", "code", "field"} and
// the HTTP status.
type Error struct {
	Status int    `json:"-"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Field  string `json:"field"`
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Detail)
	if b.Len() == 0 {
		b.WriteString(http.StatusText(e.Status))
	}
	var extra []string
	if e.Code != "" {
		extra = append(extra, "code "+e.Code)
	}
	if e.Field != "" {
		extra = append(extra, "field "+e.Field)
	}
	extra = append(extra, fmt.Sprintf("HTTP %d", e.Status))
	fmt.Fprintf(&b, " (%s)", strings.Join(extra, ", "))
	return b.String()
}

// Credentials authenticate requests: an access key, or a session that can
// be refreshed.
type Credentials interface {
	// Apply sets the request's credential headers.
	Apply(ctx context.Context, c *Client, req *http.Request) error
	// Refresh renews an expired credential; false when it cannot.
	Refresh(ctx context.Context, c *Client) (bool, error)
}

// Key is an access key (ent_…) sent as X-API-Key.
type Key string

// Apply implements Credentials.
func (k Key) Apply(_ context.Context, _ *Client, req *http.Request) error {
	req.Header.Set("X-API-Key", string(k))
	return nil
}

// Refresh implements Credentials: a key cannot be renewed.
func (Key) Refresh(context.Context, *Client) (bool, error) { return false, nil }

// Client calls one server.
type Client struct {
	BaseURL string
	Creds   Credentials // nil: anonymous
	HTTP    *http.Client
}

// New returns a client of the server at base.
func New(base string, creds Credentials) *Client {
	return &Client{BaseURL: strings.TrimRight(base, "/"), Creds: creds, HTTP: &http.Client{}}
}

// Do sends a JSON request (body nil for none) and decodes a JSON answer into
// out (if not nil; an io.Writer gets the answer's bytes). An error status
// gives *Error. A 401 with credentials that can be refreshed is retried once
// after the refresh.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var mk Body
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		mk = func() (io.Reader, string, error) { return bytes.NewReader(raw), "application/json", nil }
	}
	resp, err := c.Open(ctx, method, path, mk)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if w, ok := out.(io.Writer); ok {
		_, err := io.Copy(w, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return nil
}

// Body makes a request's body and its content type. It is called once per
// try (again for the retry after a refresh), so a body read from files is
// streamed, never held whole in memory.
type Body func() (io.Reader, string, error)

// Open sends a request with the body that body makes (nil: none) and
// returns the successful answer, whose body the caller closes. An error
// status gives *Error. A 401 with credentials that can be refreshed is
// retried once after the refresh.
func (c *Client) Open(ctx context.Context, method, path string, body Body) (*http.Response, error) {
	resp, err := c.sendBody(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized && c.Creds != nil {
		ok, err := c.Creds.Refresh(ctx, c)
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
		if ok {
			resp.Body.Close()
			if resp, err = c.sendBody(ctx, method, path, body); err != nil {
				return nil, err
			}
		}
	}
	if err := check(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

func (c *Client) sendBody(ctx context.Context, method, path string, body Body) (*http.Response, error) {
	if body == nil {
		return c.send(ctx, method, path, nil, nil)
	}
	rd, ctype, err := body()
	if err != nil {
		return nil, err
	}
	return c.send(ctx, method, path, rd, http.Header{"Content-Type": {ctype}})
}

func (c *Client) send(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		if rc, ok := body.(io.Closer); ok {
			rc.Close()
		}
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if c.Creds != nil {
		if err := c.Creds.Apply(ctx, c, req); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var be bodyError
		if errors.As(err, &be) {
			return nil, be.err
		}
		var ue *url.Error
		if errors.As(err, &ue) && ctx.Err() == nil {
			return nil, fmt.Errorf("cannot reach %s: %w (is the server running? set ENRICH_URL)", c.BaseURL, ue.Err)
		}
		return nil, err
	}
	return resp, nil
}

// check turns an error status into *Error.
func check(resp *http.Response) error {
	if resp.StatusCode < 300 {
		return nil
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(raw, e) != nil || e.Detail == "" {
		e.Detail = strings.TrimSpace(string(raw))
	}
	if resp.StatusCode == http.StatusUnauthorized && e.Code == "" {
		e.Code = "unauthenticated"
	}
	return e
}

// Retryable reports whether err is worth another try later: the server is
// unreachable or answered 503.
func Retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusBadGateway
	}
	var ue *url.Error
	return errors.As(err, &ue) || strings.HasPrefix(err.Error(), "cannot reach")
}

// backoff waits before the n-th reconnection.
func backoff(ctx context.Context, n int) error {
	d := time.Duration(n) * 300 * time.Millisecond
	if d > 3*time.Second {
		d = 3 * time.Second
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
