package e2e_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	sse "github.com/tmaxmax/go-sse"
)

// TestLastEventIDHostile: on every store, a Last-Event-ID (header or
// ?last_event_id) that is garbage, negative or past int64 is 400 naming it;
// a valid one replays exactly the events after it; and on a finished job, one
// at or past the terminal event ends the stream at once, with no event.
func TestLastEventIDHostile(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("lei@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}})
			all := s.follow(ten.key, jobID, "")
			n := len(all)
			is.New(t).True(n >= 2)
			is.New(t).Equal(all[n-1].ID, strconv.Itoa(n))

			for _, c := range []struct {
				name, header, query, field string
			}{
				{"garbage header", "abc", "", "Last-Event-ID"},
				{"negative header", "-1", "", "Last-Event-ID"},
				{"float header", "1.5", "", "Last-Event-ID"},
				{"past int64 header", "9223372036854775808", "", "Last-Event-ID"},
				{"huge header", "1" + strings.Repeat("0", 400), "", "Last-Event-ID"},
				{"garbage query", "", "abc", "last_event_id"},
				{"negative query", "", "-7", "last_event_id"},
				{"NUL query", "", "%00", "last_event_id"},
				{"invalid UTF-8 query", "", "%FF", "last_event_id"},
			} {
				t.Run(c.name, func(t *testing.T) {
					is := is.New(t)
					path := "/api/llm/stream/" + jobID
					if c.query != "" {
						path += "?last_event_id=" + c.query
					}
					var h http.Header
					if c.header != "" {
						h = http.Header{"Last-Event-Id": {c.header}}
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					r, err := s.do(ctx, "GET", path, ten.key, "", h)
					is.NoErr(err)
					is.Equal(r.status, 400)
					is.Equal(r.err.Code, "invalid_request")
					is.Equal(r.err.Field, c.field)
				})
			}

			replay := func(t *testing.T, header, query string) ([]event, error) {
				path := "/api/llm/stream/" + jobID
				if query != "" {
					path += "?last_event_id=" + query
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
				setCred(req, ten.key)
				if header != "" {
					req.Header.Set("Last-Event-ID", header)
				}
				resp, err := s.http.Do(req)
				if err != nil {
					return nil, err
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("stream: %d", resp.StatusCode)
				}
				var evs []event
				for e, err := range sse.Read(resp.Body, nil) {
					if err != nil {
						return evs, err
					}
					evs = append(evs, event{ID: e.LastEventID})
				}
				return evs, nil
			}
			for _, c := range []struct {
				name, header, query string
				want                int // events replayed
			}{
				{"zero replays all", "0", "", n},
				{"query replays after it", "", strconv.Itoa(n - 2), 2},
				{"header wins over query", strconv.Itoa(n - 1), "0", 1},
			} {
				t.Run(c.name, func(t *testing.T) {
					is := is.New(t)
					evs, err := replay(t, c.header, c.query)
					is.NoErr(err)
					is.Equal(len(evs), c.want)
					is.Equal(evs[len(evs)-1].ID, strconv.Itoa(n)) // ends with the terminal event
				})
			}
			for _, c := range []struct{ name, header, query string }{
				{"at the terminal event", strconv.Itoa(n), ""},
				{"past the terminal event", strconv.Itoa(n + 1000), ""},
				{"max int64", "9223372036854775807", ""},
				{"past the terminal event by query", "", strconv.Itoa(n + 1)},
			} {
				t.Run(c.name, func(t *testing.T) {
					is := is.New(t)
					start := time.Now()
					evs, err := replay(t, c.header, c.query)
					is.NoErr(err)
					is.Equal(len(evs), 0)
					is.True(time.Since(start) < 2*time.Second)
				})
			}
			is.New(t).Equal(s.runningAfter(5*time.Second), 0)
		})
	}
}
