package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

// Delta is a feed row as the consumer uses it.
type Delta struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	Op         string    `json:"op"`
	SQL        string    `json:"sql"`
	BatchID    string    `json:"batch_id"`
	Revision   int64     `json:"revision"`
	EntityType string    `json:"entity_type"`
	CreatedAt  time.Time `json:"created_at"`
}

// Window is a claim's answer (DeltaBatchResponse).
type Window struct {
	Deltas         []Delta    `json:"deltas"`
	HasMore        bool       `json:"has_more"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	// SnapshotRequired: the server delivers nothing until the target
	// reloads from a snapshot (a schema was linked again).
	SnapshotRequired bool `json:"snapshot_required"`
}

// Feed is the server side the consumer talks to.
type Feed interface {
	Claim(ctx context.Context) (Window, error)
	Ack(ctx context.Context, upTo int64) error
	Report(ctx context.Context, deltaID int64, msg string) error
	Snapshot(ctx context.Context) (io.ReadCloser, error)
	Checksum(ctx context.Context) (Checksum, error)
}

// Checksum is the server's checksum (DatabaseSyncChecksumResponse).
type Checksum struct {
	AsOf      int64             `json:"as_of_delta_id"`
	RowCounts map[string]int64  `json:"row_counts"`
	Tables    map[string]string `json:"tables"`
}

// HTTPFeed is the feed of one registration over the API.
type HTTPFeed struct {
	Client     *api.Client
	DatabaseID string
	Limit      int // 0: the registration's page_limit
	LeaseS     int // 0: the server's default
}

func (f *HTTPFeed) path(rest string) string {
	return "/api/databases/" + url.PathEscape(f.DatabaseID) + rest
}

// Claim leases the next window (GET /changes?claim=true&format=json).
func (f *HTTPFeed) Claim(ctx context.Context) (Window, error) {
	q := url.Values{"claim": {"true"}, "format": {"json"}, "since": {"0"}}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.LeaseS > 0 {
		q.Set("lease_s", strconv.Itoa(f.LeaseS))
	}
	var w Window
	err := f.Client.Do(ctx, http.MethodGet, f.path("/changes?"+q.Encode()), nil, &w)
	return w, err
}

// Ack acknowledges up to upTo.
func (f *HTTPFeed) Ack(ctx context.Context, upTo int64) error {
	return f.Client.Do(ctx, http.MethodPost, f.path("/ack"), map[string]int64{"up_to_id": upTo}, nil)
}

// Report sets a refused batch aside (POST /quarantine/report).
func (f *HTTPFeed) Report(ctx context.Context, deltaID int64, msg string) error {
	return f.Client.Do(ctx, http.MethodPost, f.path("/quarantine/report"), map[string]any{"delta_id": deltaID, "error": msg}, nil)
}

// Snapshot streams the jsonl snapshot.
func (f *HTTPFeed) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(f.Client.Do(ctx, http.MethodGet, f.path("/snapshot?format=jsonl"), nil, pw)) }()
	return pr, nil
}

// Checksum reads the server's checksum.
func (f *HTTPFeed) Checksum(ctx context.Context) (Checksum, error) {
	var c Checksum
	err := f.Client.Do(ctx, http.MethodGet, f.path("/checksum"), nil, &c)
	return c, err
}

// Credential authenticates with a database credential: its refresh token
// is exchanged for access tokens, again before one expires and on a 401.
type Credential struct {
	RefreshToken string

	token string
	until time.Time
}

// Apply implements api.Credentials.
func (c *Credential) Apply(ctx context.Context, cl *api.Client, req *http.Request) error {
	if c.token == "" || time.Until(c.until) < 30*time.Second {
		if _, err := c.Refresh(ctx, cl); err != nil {
			return err
		}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return nil
}

// Refresh implements api.Credentials: a new exchange.
func (c *Credential) Refresh(ctx context.Context, cl *api.Client) (bool, error) {
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	anon := &api.Client{BaseURL: cl.BaseURL, HTTP: cl.HTTP}
	if err := anon.Do(ctx, http.MethodPost, "/api/database-sync/exchange", map[string]string{"refresh_token": c.RefreshToken}, &out); err != nil {
		return false, fmt.Errorf("exchange the database credential: %w", err)
	}
	c.token, c.until = out.AccessToken, time.Now().Add(time.Duration(out.ExpiresIn)*time.Second)
	return true, nil
}

// decodeJSON reads one JSON value.
func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }
