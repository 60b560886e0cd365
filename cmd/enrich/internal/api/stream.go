package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sse "github.com/tmaxmax/go-sse"
)

// Event is one event of a job's stream: its sequence number, its name
// ("attempt", "completed", …) and its JSON payload.
type Event struct {
	ID   string
	Name string
	Data map[string]any
	Raw  json.RawMessage
}

// Terminal reports whether the event ends the job's stream.
func (e Event) Terminal() bool {
	return e.Name == "completed" || e.Name == "failed" || e.Name == "cancelled"
}

// Str returns the payload's string field k ("" when absent).
func (e Event) Str(k string) string {
	s, _ := e.Data[k].(string)
	return s
}

// Int returns the payload's number field k (0 when absent).
func (e Event) Int(k string) int {
	f, _ := e.Data[k].(float64)
	return int(f)
}

// ErrStreamEnded is returned when the stream closes before a terminal event
// and reconnecting does not help.
var ErrStreamEnded = errors.New("the stream ended before the job did")

// Follow reads job's events after lastID ("" for all) and calls fn for each,
// in order, until a terminal event (which fn also gets) or fn's error. A
// dropped connection is resumed with Last-Event-ID, so fn sees every event
// once.
func (c *Client) Follow(ctx context.Context, job, lastID string, fn func(Event) error) error {
	refreshed := false
	for fails := 0; ; {
		h := http.Header{"Accept": {"text/event-stream"}}
		if lastID != "" {
			h.Set("Last-Event-ID", lastID)
		}
		resp, err := c.send(ctx, http.MethodGet, "/api/llm/stream/"+job, nil, h)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if fails++; fails > 5 {
				return err
			}
			if err := backoff(ctx, fails); err != nil {
				return err
			}
			continue
		}
		if resp.StatusCode == http.StatusUnauthorized && c.Creds != nil && !refreshed {
			resp.Body.Close()
			refreshed = true
			if ok, err := c.Creds.Refresh(ctx, c); err != nil {
				return err
			} else if ok {
				continue
			}
			return &Error{Status: http.StatusUnauthorized, Detail: "the session expired; log in again", Code: "unauthenticated"}
		}
		if err := check(resp); err != nil {
			resp.Body.Close()
			if Retryable(err) {
				if fails++; fails <= 5 {
					if err := backoff(ctx, fails); err != nil {
						return err
					}
					continue
				}
			}
			return err
		}
		got := false
		for e, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 16 << 20}) {
			if err != nil {
				break
			}
			ev := Event{ID: e.LastEventID, Raw: json.RawMessage(e.Data)}
			if err := json.Unmarshal([]byte(e.Data), &ev.Data); err != nil {
				resp.Body.Close()
				return fmt.Errorf("job %s: event %s is not JSON: %w", job, e.LastEventID, err)
			}
			ev.Name = ev.Str("event")
			lastID, got = e.LastEventID, true
			if err := fn(ev); err != nil {
				resp.Body.Close()
				return err
			}
			if ev.Terminal() {
				resp.Body.Close()
				return nil
			}
		}
		resp.Body.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if got {
			fails = 0
		}
		if fails++; fails > 5 {
			return ErrStreamEnded
		}
		if err := backoff(ctx, fails); err != nil {
			return err
		}
	}
}
