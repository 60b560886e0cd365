package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// hook is one delivery a receiver got.
type hook struct {
	header http.Header
	body   []byte
	env    webhook.Envelope
}

// hookReceiver is a loopback receiver of notifications that counts the
// connections made to it. It can be served again on the same port after
// being closed (a receiver that was down).
type hookReceiver struct {
	t     *testing.T
	addr  string
	mu    sync.Mutex
	got   []hook
	conns atomic.Int64
	srv   *http.Server
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	return r
}

func (r *hookReceiver) serve(ln net.Listener) {
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h := hook{header: req.Header.Clone(), body: b}
		_ = json.Unmarshal(b, &h.env)
		r.mu.Lock()
		r.got = append(r.got, h)
		r.mu.Unlock()
	}), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}}
	go func() { _ = r.srv.Serve(ln) }()
	r.t.Cleanup(func() { _ = r.srv.Close() })
}

// down closes the receiver; up serves it again on the same port.
func (r *hookReceiver) down() { _ = r.srv.Close() }

func (r *hookReceiver) up() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.serve(ln)
}

func (r *hookReceiver) url() string { return "http://" + r.addr + "/hook" }

func (r *hookReceiver) port() uint16 {
	_, p, _ := net.SplitHostPort(r.addr)
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

func (r *hookReceiver) hooks() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.got...)
}

// waitFor waits until the receiver got n deliveries (at most 20 s).
func (r *hookReceiver) waitFor(n int) []hook {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := r.hooks(); len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("the receiver got %d deliveries, want %d", len(r.hooks()), n)
	return nil
}

// notifyConfig lets notifications reach the receivers and retries fast.
func notifyConfig(dsn string, receivers ...*hookReceiver) enrich.Config {
	cfg := testConfig(dsn)
	for _, r := range receivers {
		cfg.WebhookAllowLoopbackPorts = append(cfg.WebhookAllowLoopbackPorts, r.port())
	}
	cfg.WebhookPoll, cfg.WebhookRetryBase, cfg.WebhookTimeout = 50*time.Millisecond, 100*time.Millisecond, 2*time.Second
	// The servers of one database share the key that seals the secrets.
	cfg.EncryptionKeys = base64.URLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	return cfg
}

type subscriptionCreated struct {
	Subscription struct {
		ID            string `json:"id"`
		URL           string `json:"url"`
		Source        string `json:"source"`
		SavedSchemaID string `json:"saved_schema_id"`
	} `json:"subscription"`
	Secret string `json:"secret"`
}

// TestSchemaSubscriptions: the reference client's subscription calls
// (POST {url, source: n8n}, GET, DELETE ?url=), a signed enrichment_result
// per enrichment that a wrong secret does not verify, private and
// loopback URLs refused without a connection, another organization's
// schema 404.
func TestSchemaSubscriptions(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			rc := newHookReceiver(t)
			s := start(t, notifyConfig(b.dsn(t), rc))
			ten := s.register("subs@example.com")
			sc := s.createSchema(ten.key, "Company", companySchema)
			path := "/api/schemas/" + sc + "/subscriptions"

			var created subscriptionCreated
			is.Equal(s.call("POST", path, ten.key, obj{"url": rc.url(), "source": "n8n"}, &created), 201)
			is.True(len(created.Secret) > 20)
			is.Equal(created.Subscription.URL, rc.url())
			is.Equal(created.Subscription.Source, "n8n")
			is.Equal(created.Subscription.SavedSchemaID, sc)
			var list []map[string]any
			is.Equal(s.call("GET", path, ten.key, nil, &list), 200)
			is.Equal(len(list), 1)
			is.Equal(list[0]["url"], rc.url())
			_, shown := list[0]["secret"]
			is.True(!shown) // the secret is shown once

			other := s.register("other-subs@example.com")
			is.Equal(s.call("GET", path, other.key, nil, nil), 404)
			is.Equal(s.call("POST", path, other.key, obj{"url": rc.url()}, nil), 404)

			var res struct {
				RecordID string `json:"record_id"`
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": sc,
				"models": []string{"sandbox::echo"}}, &res), 200)
			got := rc.waitFor(1)[0]
			is.Equal(got.env.Event, webhook.EnrichmentResult)
			var data struct {
				ID       string `json:"id"`
				SchemaID string `json:"schema_id"`
			}
			is.NoErr(json.Unmarshal(got.env.Data, &data))
			is.Equal(data.ID, res.RecordID)
			is.Equal(data.SchemaID, sc)
			is.True(got.header.Get(webhook.EventIDHeader) != "")
			sig := got.header.Get(webhook.SignatureHeader)
			is.NoErr(webhook.Verify(created.Secret, sig, got.body, time.Now(), 0))
			is.True(webhook.Verify("whsec_wrong", sig, got.body, time.Now(), 0) != nil)

			// Addresses that are not public are refused, and nothing
			// connects to the receiver on a port not allowed.
			before := rc.conns.Load()
			for _, u := range []string{"http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/",
				"http://[::1]:" + strconv.Itoa(int(rc.port())+1) + "/hook", "http://127.0.0.1:1/hook", "http://localhost/hook"} {
				var e struct{ Code, Field string }
				mustf(t, s.call("POST", path, ten.key, obj{"url": u}, &e) == 400, "%s was not refused", u)
				is.Equal(e.Field, "url")
				is.Equal(e.Code, "webhook_url_refused")
			}
			is.Equal(rc.conns.Load(), before)

			is.Equal(s.call("DELETE", path+"?url="+rc.url(), ten.key, nil, nil), 204)
			is.Equal(s.call("GET", path, ten.key, nil, &list), 200)
			is.Equal(len(list), 0)
			is.Equal(s.call("DELETE", path+"?url="+rc.url(), ten.key, nil, nil), 204) // idempotent
			is.Equal(s.call("DELETE", path, ten.key, nil, nil), 400)                  // neither id nor url
		})
	}
}

// TestSubscriptionReceiverDown: a delivery to a receiver that is down is
// retried until it is up again, with the same event id.
func TestSubscriptionReceiverDown(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			rc := newHookReceiver(t)
			rc.down()
			s := start(t, notifyConfig(b.dsn(t), rc))
			ten := s.register("down@example.com")
			sc := s.createSchema(ten.key, "Company", companySchema)
			is.Equal(s.call("POST", "/api/schemas/"+sc+"/subscriptions", ten.key, obj{"url": rc.url()}, nil), 201)
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": sc,
				"models": []string{"sandbox::echo"}}, nil), 200)
			time.Sleep(500 * time.Millisecond) // a few attempts fail
			rc.up()
			got := rc.waitFor(1)
			is.Equal(got[0].env.Event, webhook.EnrichmentResult)
		})
	}
}

// TestSubscriptionDeliverySurvivesCrash: a delivery queued in a job's end
// commit by a server whose dispatcher never sent it (stopped, as by a
// crash right after the commit) is delivered by another server on the same
// PostgreSQL.
func TestSubscriptionDeliverySurvivesCrash(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	rc := newHookReceiver(t)
	cfg := notifyConfig(dsn, rc)
	cfg.WebhookDispatchOff = true
	a := start(t, cfg)
	ten := a.register("crash@example.com")
	sc := a.createSchema(ten.key, "Company", companySchema)
	is.Equal(a.call("POST", "/api/schemas/"+sc+"/subscriptions", ten.key, obj{"url": rc.url()}, nil), 201)
	is.Equal(a.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": sc,
		"models": []string{"sandbox::echo"}}, nil), 200)
	a.stop()
	is.Equal(len(rc.hooks()), 0)
	start(t, notifyConfig(dsn, rc))
	got := rc.waitFor(1)
	is.Equal(got[0].env.Event, webhook.EnrichmentResult)
}

// appendDeltas appends n data deltas of schemaID to the registration's
// feed, one commit each, gap apart.
func appendDeltas(t *testing.T, s *service, databaseID, schemaID string, n int, gap time.Duration) {
	t.Helper()
	for i := range n {
		err := s.srv.Stores.UoW.InTx(context.Background(), func(ctx context.Context, r ports.Repos) error {
			_, err := r.Feed.Append(ctx, databaseID, []ports.FeedRow{{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert,
				SQL: "SELECT 1", BatchID: fmt.Sprintf("b-%d-%d", time.Now().UnixNano(), i), Revision: 1, EntityType: "company",
				CreatedAt: time.Now()}, SchemaID: schemaID}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(gap)
	}
}

// TestLinkWebhookDebounced: a link's delta webhook gets one signed
// notification for a burst of deltas (after the quiet period), a steady
// stream still notifies by the cap, the secret is kept when the URL
// changes and is the owner's to read, and a private URL is refused.
func TestLinkWebhookDebounced(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			rc := newHookReceiver(t)
			s := start(t, notifyConfig(b.dsn(t), rc))
			ten := s.register("deltas@example.com")
			sc := s.createSchema(ten.key, "Company", keyedSchema)
			var created struct {
				Database databaseSync `json:"database"`
			}
			is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", ten.key, obj{"name": "wh", "notify_debounce_s": 1,
				"max_threshold_timeout_s": 2}, &created), 201)
			db := created.Database.ID
			path := "/api/databases/" + db + "/schemas/" + sc + "/webhook"
			var sec struct {
				WebhookSecret *string `json:"webhook_secret"`
			}
			is.Equal(s.call("PUT", path, ten.key, obj{"webhook_url": "http://10.0.0.1/deltas"}, nil), 400)
			is.Equal(s.call("PUT", path, ten.key, obj{"webhook_url": "http://127.0.0.1:1/other"}, nil), 400)
			is.Equal(s.call("PUT", path, ten.key, obj{"webhook_url": rc.url()}, &sec), 200)
			is.True(sec.WebhookSecret != nil)
			secret := *sec.WebhookSecret
			is.Equal(s.call("PUT", path, ten.key, obj{"webhook_url": rc.url() + "?v=2"}, &sec), 200)
			is.Equal(*sec.WebhookSecret, secret) // kept when the URL changes
			is.Equal(s.call("GET", "/api/databases/"+db+"/webhook-secret?saved_schema_id="+sc, ten.key, nil, &sec), 200)
			is.Equal(*sec.WebhookSecret, secret)
			other := s.register("deltas-other@example.com")
			is.Equal(s.call("PUT", path, other.key, obj{"webhook_url": rc.url()}, nil), 404)

			// A burst: five deltas 100 ms apart, one notification.
			appendDeltas(t, s, db, sc, 5, 100*time.Millisecond)
			got := rc.waitFor(1)
			time.Sleep(1500 * time.Millisecond) // nothing more comes
			is.Equal(len(rc.hooks()), 1)
			is.Equal(got[0].env.Event, webhook.DeltasAvailable)
			is.NoErr(webhook.Verify(secret, got[0].header.Get(webhook.SignatureHeader), got[0].body, time.Now(), 0))
			var data webhook.DeltasData
			is.NoErr(json.Unmarshal(got[0].env.Data, &data))
			is.Equal(data.DatabaseID, db)
			is.Equal(data.SavedSchemaID, sc)
			is.True(data.MaxDeltaID >= 5)

			// A steady stream (a delta every 300 ms, never quiet for the
			// 1 s debounce) still notifies within the 2 s cap.
			started := time.Now()
			appendDeltas(t, s, db, sc, 12, 300*time.Millisecond)
			is.True(len(rc.hooks()) >= 2) // notified again before the stream ended
			is.True(time.Since(started) > 3*time.Second)

			// Detached: no secret in the answer; later deltas notify no one.
			is.Equal(s.call("PUT", path, ten.key, obj{"webhook_url": nil}, &sec), 200)
			is.True(sec.WebhookSecret == nil)
		})
	}
}

// TestNotifyHostileTypes: wrong types, a huge URL, an unknown source and
// a missing field answer 400 naming the field, on memory storage.
func TestNotifyHostileTypes(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("types@example.com")
	sc := s.createSchema(ten.key, "Company", keyedSchema)
	var created struct{ Database databaseSync }
	is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", ten.key, obj{"name": "wh"}, &created), 201)
	subs := "/api/schemas/" + sc + "/subscriptions"
	hook := "/api/databases/" + created.Database.ID + "/schemas/" + sc + "/webhook"
	huge := "https://93.184.216.34/" + strings.Repeat("a", 3000)
	for _, c := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"url a number", "POST", subs, obj{"url": 5}, "url"},
		{"url null", "POST", subs, obj{"url": nil}, "url"},
		{"url missing", "POST", subs, obj{"source": "n8n"}, "url"},
		{"url huge", "POST", subs, obj{"url": huge}, "url"},
		{"url not http", "POST", subs, obj{"url": "file:///etc/passwd"}, "url"},
		{"source unknown", "POST", subs, obj{"url": "https://93.184.216.34/h", "source": "zapier"}, "source"},
		{"source a number", "POST", subs, obj{"url": "https://93.184.216.34/h", "source": 1}, "source"},
		{"delete both", "DELETE", subs + "?subscription_id=a&url=b", nil, "subscription_id"},
		{"webhook_url a number", "PUT", hook, obj{"webhook_url": 5}, "webhook_url"},
		{"webhook_url missing", "PUT", hook, obj{}, "webhook_url"},
		{"webhook_url huge", "PUT", hook, obj{"webhook_url": huge}, "webhook_url"},
		{"webhook_url metadata", "PUT", hook, obj{"webhook_url": "http://169.254.169.254/"}, "webhook_url"},
	} {
		var e struct{ Code, Field string }
		st := s.call(c.method, c.path, ten.key, c.body, &e)
		mustf(t, st == 400 && e.Field == c.field, "%s: got %d field %q, want 400 field %q", c.name, st, e.Field, c.field)
	}
	is.Equal(s.call("PUT", "/api/databases/nope/schemas/"+sc+"/webhook", ten.key, obj{"webhook_url": nil}, nil), 404)
	is.Equal(s.call("GET", "/api/databases/nope/webhook-secret", ten.key, nil, nil), 404)
}
