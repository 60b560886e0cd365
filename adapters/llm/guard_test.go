package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"code.dny.dev/ssrf"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestCustomerEndpointCannotReachLoopback: a customer's provider pointing
// at a loopback server is refused at dial time; the server sees nothing,
// for calls and for key tests alike. The same server declared by the
// operators is reachable.
func TestCustomerEndpointCannotReachLoopback(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	for _, base := range []string{fake.URL(), "http://localhost:" + port(t, fake.URL()) + "/v1"} {
		r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
			{Name: "theirs", Type: "openai", BaseURL: base, Models: []string{"m"}, Customer: true},
		}})
		is.NoErr(err)
		req := request(t, "theirs::m", companySchema, acme)
		req.Credential = cred("k", 1, "sk-customer-key-0001", nil)
		_, err = r.Generate(context.Background(), req)
		is.True(errors.Is(err, llm.ErrForbiddenDestination))
		is.True(errors.Is(err, ports.ErrLLMUnavailable))
		err = r.TestKey(context.Background(), "theirs", *cred("k", 1, "sk-customer-key-0001", nil))
		is.True(errors.Is(err, llm.ErrForbiddenDestination))
	}
	is.Equal(fake.Requests(), 0) // no request reached the loopback server

	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
		{Name: "ours", Type: "openai", BaseURL: fake.URL(), Models: []string{"m"}, Keyless: true},
	}})
	is.NoErr(err)
	_, err = r.Generate(context.Background(), request(t, "ours::m", companySchema, acme))
	is.NoErr(err)
	is.Equal(fake.Requests(), 1)
}

// TestGuardedRedirectIsChecked: every redirect hop dials through the guard.
// The test guard lets one loopback port through as if it were public; that
// server redirects to another loopback server, which must see no request.
func TestGuardedRedirectIsChecked(t *testing.T) {
	is := is.New(t)
	var reached atomic.Int64
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer inner.Close()
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer outer.Close()
	p, _ := strconv.Atoi(port(t, outer.URL))
	hc := llm.GuardedHTTPClient(ssrf.WithPorts(uint16(p)), ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.1/32")))

	resp, err := hc.Get(outer.URL + "/start")
	if resp != nil {
		resp.Body.Close()
	}
	is.True(errors.Is(err, ssrf.ErrProhibitedPort)) // the second hop was refused
	is.Equal(reached.Load(), int64(0))

	// Through the registry, the call is classified as a forbidden destination.
	r, err := llm.NewRegistry(llm.Config{GuardedHTTPClient: hc, Providers: []llm.ProviderConfig{
		{Name: "theirs", Type: "openai", BaseURL: outer.URL + "/v1", Models: []string{"m"}, Customer: true},
	}})
	is.NoErr(err)
	req := request(t, "theirs::m", companySchema, acme)
	req.Credential = cred("k", 1, "sk-customer-key-0001", nil)
	_, err = r.Generate(context.Background(), req)
	is.True(errors.Is(err, llm.ErrForbiddenDestination))
	is.Equal(reached.Load(), int64(0))
}

func port(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
