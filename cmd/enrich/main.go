// Command enrich is a small client of the Entity Enrichment Service.
//
//	ENRICH_URL=http://localhost:8080 ENRICH_API_KEY=ent_... enrich <command>
//
// Commands:
//
//	options                               models, languages, strategies
//	schemas                               list saved schemas
//	schema-create NAME FILE               save the JSON Schema in FILE
//	run SCHEMA_ID JSON [MODEL [STRATEGY]] start an enrichment and follow it to its end
//	stream JOB_ID                         follow a job's events
//	cancel JOB_ID                         cancel a job
//	record ID                             print a record
//	admin grant-sysadmin EMAIL            make a user a system administrator
//	admin revoke-sysadmin EMAIL           take the flag back
//
// The admin commands act on the database directly (DATABASE_URL), not through
// the API: they are for operators of the server.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/entityenrich/enrich"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enrich:", err)
		os.Exit(1)
	}
}

type client struct {
	base, key string
	http      *http.Client
}

func (c *client) do(method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		var e struct{ Detail string }
		_ = json.Unmarshal(raw, &e)
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, e.Detail)
	}
	return raw, nil
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: enrich options|schemas|schema-create|run|stream|cancel|record (see go doc)")
	}
	c := &client{base: strings.TrimRight(env("ENRICH_URL", "http://localhost:8080"), "/"), key: os.Getenv("ENRICH_API_KEY"),
		http: &http.Client{Timeout: 0}}
	print := func(raw []byte, err error) error {
		if err != nil {
			return err
		}
		var v any
		_ = json.Unmarshal(raw, &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
	need := func(n int) error {
		if len(args)-1 < n {
			return fmt.Errorf("%s needs %d argument(s)", args[0], n)
		}
		return nil
	}
	switch args[0] {
	case "admin":
		return admin(args[1:], out)
	case "options":
		return print(c.do("GET", "/api/enrichment/options", nil))
	case "schemas":
		return print(c.do("GET", "/api/schema/saved", nil))
	case "schema-create":
		if err := need(2); err != nil {
			return err
		}
		doc, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		return print(c.do("POST", "/api/schema/saved", map[string]any{"name": args[1], "schema": json.RawMessage(doc)}))
	case "record":
		if err := need(1); err != nil {
			return err
		}
		return print(c.do("GET", "/api/records/"+args[1], nil))
	case "cancel":
		if err := need(1); err != nil {
			return err
		}
		return print(c.do("POST", "/api/llm/cancel/"+args[1], nil))
	case "stream":
		if err := need(1); err != nil {
			return err
		}
		return c.stream(args[1], out)
	case "run":
		if err := need(2); err != nil {
			return err
		}
		body := map[string]any{"schema_id": args[1], "entity_data": json.RawMessage(args[2])}
		if len(args) > 3 {
			body["model"] = args[3]
		}
		if len(args) > 4 {
			body["strategy"] = args[4]
		}
		raw, err := c.do("POST", "/api/single/enrich/stream", body)
		if err != nil {
			return err
		}
		var j struct {
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(raw, &j); err != nil {
			return err
		}
		fmt.Fprintln(out, "job", j.JobID)
		return c.stream(j.JobID, out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// stream follows a job's SSE stream, reconnecting with Last-Event-ID when
// the connection drops, and prints one line per event.
func (c *client) stream(jobID string, out io.Writer) error {
	last := ""
	for tries := 0; tries < 5; tries++ {
		req, err := http.NewRequest("GET", c.base+"/api/llm/stream/"+jobID, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-API-Key", c.key)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("stream %s: status %d", jobID, resp.StatusCode)
		}
		for e, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 4 << 20}) {
			if err != nil {
				break
			}
			last = e.LastEventID
			var d map[string]any
			if err := json.Unmarshal([]byte(e.Data), &d); err != nil {
				continue
			}
			name, _ := d["event"].(string)
			delete(d, "job_id")
			delete(d, "event")
			b, _ := json.Marshal(d)
			fmt.Fprintf(out, "%s %s %s\n", e.LastEventID, name, b)
			switch name {
			case "completed", "cancelled":
				resp.Body.Close()
				return nil
			case "failed":
				resp.Body.Close()
				return fmt.Errorf("job failed: %v", d["error_code"])
			}
		}
		resp.Body.Close()
	}
	return errors.New("stream ended before the job did")
}

// admin runs an operator command against DATABASE_URL.
func admin(args []string, out io.Writer) error {
	if len(args) != 2 || (args[0] != "grant-sysadmin" && args[0] != "revoke-sysadmin") {
		return errors.New("usage: enrich admin grant-sysadmin|revoke-sysadmin EMAIL")
	}
	cfg, err := enrich.LoadConfig(os.Environ())
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("admin commands need DATABASE_URL (memory storage lives only inside a server)")
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	e, err := enrich.NewEmbedded(ctx, cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	u, err := e.Access.GrantSysAdmin(ctx, args[1], args[0] == "grant-sysadmin")
	if err != nil {
		return fmt.Errorf("%s %s: %w", args[0], args[1], err)
	}
	_, err = fmt.Fprintf(out, "%s is_sysadmin=%v\n", u.Email, u.SysAdmin)
	return err
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
