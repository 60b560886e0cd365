package syncer_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityenrich/enrich/domain/webhook"
)

// crashReceiver takes the subscription's events and the link's delta
// notifications on loopback. It holds each delivery a little before
// answering, so that a kill lands while deliveries are in flight, and
// answers one in ten 503 (a retry). It keeps what arrived by event id and
// counts what does not verify.
type crashReceiver struct {
	t        *testing.T
	rng      *lockedRand
	addr     string
	inflight atomic.Int64

	mu         sync.Mutex
	subSecret  string
	linkSecret string
	byID       map[string]int    // event id: deliveries answered 200
	records    map[string]string // enrichment_result's record id: its event id
	events     map[string]string // event id: event name
	notices    int               // delta notifications answered 200
	noticed    int64             // the highest max_delta_id announced
	bad        []string          // what did not verify
}

func newCrashReceiver(t *testing.T, rng *lockedRand) *crashReceiver {
	rc := &crashReceiver{t: t, rng: rng, byID: map[string]int{}, records: map[string]string{}, events: map[string]string{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(rc.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return rc
}

func (rc *crashReceiver) url(path string) string { return "http://" + rc.addr + "/" + path }

func (rc *crashReceiver) port() uint16 {
	_, p, _ := net.SplitHostPort(rc.addr)
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

func (rc *crashReceiver) setSecrets(sub, link string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.subSecret, rc.linkSecret = sub, link
}

func (rc *crashReceiver) inFlight() int64 { return rc.inflight.Load() }

func (rc *crashReceiver) serve(w http.ResponseWriter, req *http.Request) {
	rc.inflight.Add(1)
	defer rc.inflight.Add(-1)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return // the sender died mid-body
	}
	time.Sleep(time.Duration(20+rc.rng.IntN(230)) * time.Millisecond)
	if rc.rng.IntN(10) == 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rc.take(req.URL.Path, req.Header, body)
}

// take checks and keeps one delivery.
func (rc *crashReceiver) take(path string, h http.Header, body []byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	id := h.Get(webhook.EventIDHeader)
	secret := rc.subSecret
	if path == "/link" {
		secret = rc.linkSecret
	}
	var env webhook.Envelope
	switch {
	case id == "":
		rc.bad = append(rc.bad, path+": no event id")
	case json.Unmarshal(body, &env) != nil:
		rc.bad = append(rc.bad, path+": not JSON: "+string(body))
	case webhook.Verify(secret, h.Get(webhook.SignatureHeader), body, time.Now(), 0) != nil:
		rc.bad = append(rc.bad, path+": the signature of "+id+" does not verify")
	case webhook.Verify("whsec_wrong", h.Get(webhook.SignatureHeader), body, time.Now(), 0) == nil:
		rc.bad = append(rc.bad, path+": "+id+" verifies with a wrong secret")
	}
	rc.byID[id]++
	rc.events[id] = string(env.Event)
	switch env.Event {
	case webhook.DeltasAvailable:
		var d webhook.DeltasData
		_ = json.Unmarshal(env.Data, &d)
		rc.notices++
		rc.noticed = max(rc.noticed, d.MaxDeltaID)
	case webhook.EnrichmentResult:
		var rec struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(env.Data, &rec)
		rc.records[rec.ID] = id
	}
}

func (rc *crashReceiver) noticedUpTo() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.noticed
}

func (rc *crashReceiver) noticeCount() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.notices
}

// total is the deliveries answered 200, distinct their event ids.
func (rc *crashReceiver) total() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, c := range rc.byID {
		n += c
	}
	return n
}

func (rc *crashReceiver) distinct() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.byID)
}
