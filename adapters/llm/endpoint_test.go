package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// endpoint is an organization's provider at base, with secret as its key
// ("" for none).
func endpoint(id string, version int, base, secret string) ports.Endpoint {
	e := ports.Endpoint{ProviderID: id, Version: version, Type: "openai_compatible", BaseURL: base}
	if secret != "" {
		e.Open = func() (ports.Secret, error) { return ports.Secret(secret), nil }
	}
	return e
}

func endpointCred(e ports.Endpoint) *ports.Credential {
	return &ports.Credential{KeyID: e.ProviderID, Version: e.Version, Source: rotation.Organization, Open: e.Open, Endpoint: &e}
}

// loopbackRegistry lets the guarded client reach the loopback ports of
// servers (an operator's test setting), and nothing else.
func loopbackRegistry(t *testing.T, servers ...string) *llm.Registry {
	t.Helper()
	var ports []uint16
	for _, s := range servers {
		p, err := strconv.Atoi(port(t, s))
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, uint16(p))
	}
	r, err := llm.NewRegistry(llm.Config{Timeout: 5 * time.Second,
		GuardedHTTPClient: llm.GuardedHTTPClientFor(netguard.Options{AllowLoopbackPorts: ports})})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEndpointRefusedLoopback: an organization's endpoint on a loopback
// server is refused at dial time for calls, tests and discovery alike, and
// the server sees no request at all.
func TestEndpointRefusedLoopback(t *testing.T) {
	var reached atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	strict, err := llm.NewRegistry(llm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	other := fakeopenai.New(t)
	allowsAnother := loopbackRegistry(t, other.URL()) // a listed port does not open the others
	for _, tt := range []struct {
		name string
		r    *llm.Registry
		base string
	}{
		{"strict", strict, srv.URL + "/v1"},
		{"strict, localhost", strict, "http://localhost:" + port(t, srv.URL) + "/v1"},
		{"another port listed", allowsAnother, srv.URL + "/v1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ep := endpoint("prov1", 1, tt.base, "sk-org-endpoint-0001")
			err := tt.r.TestEndpoint(context.Background(), ep, "m")
			is.True(errors.Is(err, ports.ErrDestinationRefused))
			err = tt.r.TestEndpoint(context.Background(), ep, "")
			is.True(errors.Is(err, ports.ErrDestinationRefused))
			_, err = tt.r.ListEndpointModels(context.Background(), ep)
			is.True(errors.Is(err, ports.ErrDestinationRefused))
			req := request(t, "mine::m", companySchema, acme)
			req.Credential = endpointCred(ep)
			_, err = tt.r.Generate(context.Background(), req)
			is.True(errors.Is(err, ports.ErrDestinationRefused))
			is.True(errors.Is(err, ports.ErrLLMUnavailable))
		})
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the loopback server saw %d requests", n)
	}
}

// TestEndpointCalls: through a guard that lets the fake's port through, an
// endpoint's models are listed, tested and called with its key; a keyless
// endpoint sends no Authorization header; a refused key is ErrLLMAuth.
func TestEndpointCalls(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-org-endpoint-0001"), fakeopenai.WithModels("llama3", "qwen3"))
	r := loopbackRegistry(t, fake.URL())
	ctx := context.Background()
	ep := endpoint("prov1", 1, fake.URL(), "sk-org-endpoint-0001")

	ids, err := r.ListEndpointModels(ctx, ep)
	is.NoErr(err)
	is.Equal(ids, []string{"llama3", "qwen3"})
	is.NoErr(r.TestEndpoint(ctx, ep, "llama3"))
	is.NoErr(r.TestEndpoint(ctx, ep, ""))

	req := request(t, "mine::llama3", companySchema, acme)
	req.Credential = endpointCred(ep)
	resp, err := r.Generate(ctx, req)
	is.NoErr(err)
	is.True(resp.Text != "")
	last, _ := fake.LastRequest()
	is.Equal(last.Model, "llama3")

	bad := endpoint("prov2", 1, fake.URL(), "sk-wrong-key-00001")
	err = r.TestEndpoint(ctx, bad, "llama3")
	is.True(errors.Is(err, ports.ErrLLMAuth))
	req.Credential = endpointCred(bad)
	_, err = r.Generate(ctx, req)
	is.True(errors.Is(err, ports.ErrLLMAuth))
}

// TestEndpointKeyless: an endpoint without a key sends no Authorization
// header, for calls and for the model list.
func TestEndpointKeyless(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var auth []string
	fake := fakeopenai.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"a"},{"id":""},{"id":"b"}]}`))
			return
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer srv.Close()
	r := loopbackRegistry(t, srv.URL, fake.URL())
	ids, err := r.ListEndpointModels(context.Background(), endpoint("p", 1, srv.URL+"/v1", ""))
	is.NoErr(err)
	is.Equal(ids, []string{"a", "b"})
	mu.Lock()
	is.Equal(auth, []string{""})
	mu.Unlock()
	req := request(t, "mine::m", companySchema, acme)
	req.Credential = endpointCred(endpoint("p2", 1, fake.URL(), ""))
	_, err = r.Generate(context.Background(), req)
	is.NoErr(err)
}

// TestEndpointModelListRefused: an answer that is not OpenAI's model list
// is an error, not an empty list.
func TestEndpointModelListRefused(t *testing.T) {
	for _, body := range []string{`not json`, `{"models":["a"]}`, `[]`} {
		t.Run(body, func(t *testing.T) {
			is := is.New(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
			defer srv.Close()
			r := loopbackRegistry(t, srv.URL)
			_, err := r.ListEndpointModels(context.Background(), endpoint("p", 1, srv.URL+"/v1", ""))
			is.True(errors.Is(err, ports.ErrLLMUnavailable))
		})
	}
}

// TestEndpointClientPerVersion: the client of an endpoint is built once per
// version: the key is opened again only when the version changes, and
// Forget drops it.
func TestEndpointClientPerVersion(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-org-endpoint-0001"))
	r := loopbackRegistry(t, fake.URL())
	var opened atomic.Int64
	ep := func(v int) ports.Endpoint {
		e := endpoint("prov1", v, fake.URL(), "")
		e.Open = func() (ports.Secret, error) { opened.Add(1); return "sk-org-endpoint-0001", nil }
		return e
	}
	req := request(t, "mine::m", companySchema, acme)
	for _, tt := range []struct {
		version int
		forget  bool
		opened  int64
	}{{1, false, 1}, {1, false, 1}, {2, false, 2}, {2, false, 2}, {2, true, 3}} {
		if tt.forget {
			r.Forget("prov1")
		}
		req.Credential = endpointCred(ep(tt.version))
		_, err := r.Generate(context.Background(), req)
		is.NoErr(err)
		is.Equal(opened.Load(), tt.opened)
	}
}

// TestEndpointRedirectRechecked: an endpoint the guard lets through that
// redirects its model list to another loopback server is refused at the
// second hop; that server sees nothing.
func TestEndpointRedirectRechecked(t *testing.T) {
	is := is.New(t)
	var reached atomic.Int64
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte(`{"data":[{"id":"stolen"}]}`))
	}))
	defer inner.Close()
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/v1/models", http.StatusFound)
	}))
	defer outer.Close()
	r := loopbackRegistry(t, outer.URL)
	_, err := r.ListEndpointModels(context.Background(), endpoint("p", 1, outer.URL+"/v1", "sk-org-endpoint-0001"))
	is.True(errors.Is(err, ports.ErrDestinationRefused))
	is.Equal(reached.Load(), int64(0))
}
