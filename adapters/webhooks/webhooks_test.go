package webhooks_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/adapters/webhooks"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// receiver is a loopback server that counts the connections made to it.
type receiver struct {
	*httptest.Server
	conns atomic.Int64
	got   chan *http.Request
	body  chan []byte
}

func newReceiver(t *testing.T, h http.HandlerFunc) *receiver {
	r := &receiver{got: make(chan *http.Request, 10), body: make(chan []byte, 10)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.got <- req
		r.body <- b
		if h != nil {
			h(w, req)
		}
	}))
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) port(t *testing.T) uint16 {
	_, p, _ := net.SplitHostPort(r.Listener.Addr().String())
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

func TestSendSignedDelivery(t *testing.T) {
	is := is.New(t)
	rc := newReceiver(t, nil)
	s := webhooks.New(webhooks.Config{Guard: netguard.Options{AllowLoopbackPorts: []uint16{rc.port(t)}}})
	body := webhook.Body(webhook.EnrichmentResult, []byte(`{"id":"r1"}`))
	now := time.Now()
	is.NoErr(s.CheckURL(context.Background(), rc.URL+"/hook"))
	is.NoErr(s.Send(context.Background(), ports.WebhookRequest{URL: rc.URL + "/hook", EventID: "evt-1",
		Event: webhook.EnrichmentResult, Signature: webhook.Sign("whsec_x", now, body), Body: body}))
	req, got := <-rc.got, <-rc.body
	is.Equal(req.Method, http.MethodPost)
	is.Equal(req.Header.Get("Content-Type"), "application/json")
	is.Equal(req.Header.Get(webhook.EventIDHeader), "evt-1")
	is.Equal(string(got), string(body))
	is.NoErr(webhook.Verify("whsec_x", req.Header.Get(webhook.SignatureHeader), got, time.Now(), 0))
	is.True(errors.Is(webhook.Verify("whsec_other", req.Header.Get(webhook.SignatureHeader), got, time.Now(), 0), webhook.ErrBadSignature))
}

func TestRefusedWithoutConnection(t *testing.T) {
	rc := newReceiver(t, nil)
	s := webhooks.New(webhooks.Config{Guard: netguard.Options{AllowLoopbackPorts: []uint16{1}}, Timeout: 2 * time.Second})
	urls := []string{
		rc.URL + "/hook", // loopback on a port the tests did not allow
		"http://10.0.0.1/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:" + strconv.Itoa(int(rc.port(t))) + "/hook",
		"http://localhost:" + strconv.Itoa(int(rc.port(t))) + "/hook",
		"http://192.168.1.10/hook",
		"http://[fd00::1]/hook",
		"http://2130706433/hook",
		"ftp://example.com/hook",
		"http://user:pass@127.0.0.1:1/hook",
		"/relative",
	}
	for _, u := range urls {
		t.Run(u, func(t *testing.T) {
			is := is.New(t)
			is.True(errors.Is(s.CheckURL(context.Background(), u), ports.ErrWebhookRefused))
			err := s.Send(context.Background(), ports.WebhookRequest{URL: u, EventID: "e", Body: []byte(`{}`)})
			is.True(err != nil)
		})
	}
	is.New(t).Equal(rc.conns.Load(), int64(0)) // no connection was made
}

func TestRedirectNotFollowed(t *testing.T) {
	is := is.New(t)
	target := newReceiver(t, nil)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	s := webhooks.New(webhooks.Config{Guard: netguard.Options{AllowLoopbackPorts: []uint16{rc.port(t), target.port(t)}}})
	err := s.Send(context.Background(), ports.WebhookRequest{URL: rc.URL, EventID: "e", Body: []byte(`{}`)})
	is.True(err != nil) // a 3xx is a failed attempt
	is.Equal(target.conns.Load(), int64(0))
}

func TestErrorStatusFails(t *testing.T) {
	is := is.New(t)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	s := webhooks.New(webhooks.Config{Guard: netguard.Options{AllowLoopbackPorts: []uint16{rc.port(t)}}})
	err := s.Send(context.Background(), ports.WebhookRequest{URL: rc.URL, EventID: "e", Body: []byte(`{}`)})
	is.True(err != nil)
	is.True(!errors.Is(err, ports.ErrWebhookRefused))
}
