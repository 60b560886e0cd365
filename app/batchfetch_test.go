package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/fetch"
	"github.com/entityenrich/enrich/ports"
)

// fakeFetcher answers one document or error and keeps the request.
type fakeFetcher struct {
	doc  ports.FetchedDocument
	err  error
	got  []ports.FetchRequest
	hits int
}

func (f *fakeFetcher) Fetch(_ context.Context, req ports.FetchRequest) (ports.FetchedDocument, error) {
	f.hits++
	f.got = append(f.got, req)
	return f.doc, f.err
}

func operatorPrincipal() *access.Principal {
	return &access.Principal{OrgID: "org", Role: access.Operator, Scopes: access.DefaultScopes()}
}

func str(s string) *string { return &s }

// TestFetchRequestChecks: what is refused before anything is fetched, with
// the field named, and what each auth type sends.
func TestFetchRequestChecks(t *testing.T) {
	const u = "https://api.example.com/companies"
	for _, tt := range []struct {
		name  string
		in    app.FetchInput
		field string
		code  string
	}{
		{"no url", app.FetchInput{}, "url", "invalid_request"},
		{"ftp", app.FetchInput{URL: "ftp://x/y"}, "url", "invalid_request"},
		{"credentials in url", app.FetchInput{URL: "https://a:b@api.example.com/"}, "url", "invalid_request"},
		{"unknown auth type", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "oauth2"}}, "auth.auth_type", "invalid_request"},
		{"bearer without token", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "bearer", BearerToken: str("")}}, "auth.bearer_token", "invalid_request"},
		{"api key without value", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "api_key"}}, "auth.api_key_value", "invalid_request"},
		{"api key in Host", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "api_key", APIKeyValue: str("v"), APIKeyHeader: str("Host")}}, "auth.api_key_header", "invalid_request"},
		{"api key header with colon", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "api_key", APIKeyValue: str("v"), APIKeyHeader: str("X-A:b")}}, "auth.api_key_header", "invalid_request"},
		{"header injection", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "bearer", BearerToken: str("t\nX-Evil: 1")}}, "auth.bearer_token", "invalid_request"},
		{"basic without user", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "basic", BasicPassword: str("p")}}, "auth.basic_username", "invalid_request"},
		{"basic user with colon", app.FetchInput{URL: u, Auth: &app.FetchAuthInput{Type: "basic", BasicUsername: str("a:b")}}, "auth.basic_username", "invalid_request"},
		{"batch without a batch service", app.FetchInput{URL: u, Batch: &app.BatchRequest{}}, "batch", "not_supported_yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f := &fakeFetcher{}
			s := &app.FetchService{Fetcher: f}
			_, err := s.Fetch(context.Background(), operatorPrincipal(), tt.in)
			e, ok := app.AsError(err)
			is.True(ok)
			is.Equal(e.Field, tt.field)
			is.Equal(e.Code, tt.code)
			is.Equal(f.hits, 0) // nothing was fetched
		})
	}

	is := is.New(t)
	f := &fakeFetcher{doc: ports.FetchedDocument{Body: []byte(`[{"a":1}]`), ContentType: "application/json"}}
	s := &app.FetchService{Fetcher: f}
	for _, in := range []*app.FetchAuthInput{
		nil,
		{Type: "bearer", BearerToken: str("tok"), BasicUsername: str("ignored")},
		{Type: "api_key", APIKeyValue: str("k")},
		{Type: "api_key", APIKeyValue: str("k"), APIKeyHeader: str("X-Partner")},
		{Type: "basic", BasicUsername: str("u")},
		{Type: "", BearerToken: str("ignored")},
	} {
		res, err := s.Fetch(context.Background(), operatorPrincipal(), app.FetchInput{URL: u, Auth: in})
		is.NoErr(err)
		is.Equal(res.Total, 1)
		is.Equal(res.Format, fetch.JSON)
	}
	a := f.got
	is.Equal(a[0].Auth.Type, fetch.AuthNone)
	is.Equal(a[1].Auth.Type, fetch.AuthBearer)
	is.Equal(a[1].Auth.BearerToken.Reveal(), "tok")
	is.Equal(a[1].Auth.Username, "")
	is.Equal(a[2].Auth.HeaderName, fetch.DefaultAPIKeyHeader)
	is.Equal(a[3].Auth.HeaderName, "X-Partner")
	is.Equal(a[4].Auth.Username, "u")
	is.Equal(a[4].Auth.Password.Reveal(), "")
	is.Equal(a[5].Auth.Type, fetch.AuthNone)
	is.Equal(a[5].Auth.BearerToken.Reveal(), "")
}

// TestFetchErrors: the port's errors become 400s naming url or 502/504;
// the document's problems 400s naming url; an operator-less caller is
// refused before anything is fetched.
func TestFetchErrors(t *testing.T) {
	for _, tt := range []struct {
		doc   ports.FetchedDocument
		err   error
		kind  error
		code  string
		field string
	}{
		{err: ports.ErrFetchRefused, kind: ports.ErrInvalid, code: "url_refused", field: "url"},
		{err: ports.ErrFetchTooLarge, kind: ports.ErrInvalid, code: "fetch_too_large", field: "url"},
		{err: ports.ErrFetchFailed, kind: ports.ErrFetchFailed, code: "fetch_failed"},
		{err: ports.ErrFetchTimeout, kind: ports.ErrFetchTimeout, code: "fetch_timeout"},
		{doc: ports.FetchedDocument{Body: []byte(`{"x":1}`), ContentType: "application/json"}, kind: ports.ErrInvalid, code: "fetch_unparseable", field: "url"},
		{doc: ports.FetchedDocument{Body: []byte("a\n1\n2\n3\n"), ContentType: "text/csv"}, kind: ports.ErrInvalid, code: "too_many_entities", field: "url"},
	} {
		is := is.New(t)
		s := &app.FetchService{Fetcher: &fakeFetcher{doc: tt.doc, err: tt.err}, MaxEntities: 2}
		_, err := s.Fetch(context.Background(), operatorPrincipal(), app.FetchInput{URL: "https://api.example.com/x"})
		is.True(errors.Is(err, tt.kind))
		e, ok := app.AsError(err)
		is.True(ok)
		is.Equal(e.Code, tt.code)
		is.Equal(e.Field, tt.field)
	}
	is := is.New(t)
	f := &fakeFetcher{}
	s := &app.FetchService{Fetcher: f}
	_, err := s.Fetch(context.Background(), &access.Principal{OrgID: "org", Role: access.Owner, Scopes: []access.Scope{access.ScopeRead}},
		app.FetchInput{URL: "https://api.example.com/x"})
	is.True(errors.Is(err, access.ErrForbidden))
	is.Equal(f.hits, 0)
}

// refusingBatches refuses every batch at the check, as the batch service
// refuses another organization's schema_id.
type refusingBatches struct{ checked, started int }

func (b *refusingBatches) CheckBatch(context.Context, *access.Principal, app.BatchRequest) error {
	b.checked++
	return &app.Error{Kind: ports.ErrNotFound, Code: "not_found", Detail: "schema s not found"}
}

func (b *refusingBatches) StartBatch(context.Context, *access.Principal, app.BatchRequest) (*app.BatchStarted, error) {
	b.started++
	return nil, errors.New("not reached")
}

// TestFetchChecksTheBatchFirst: a batch the batch service refuses (another
// organization's schema_id) is refused before the URL is downloaded.
func TestFetchChecksTheBatchFirst(t *testing.T) {
	is := is.New(t)
	f := &fakeFetcher{doc: ports.FetchedDocument{Body: []byte(`[{"a":1}]`), ContentType: "application/json"}}
	b := &refusingBatches{}
	s := &app.FetchService{Fetcher: f, Batches: b}
	_, err := s.Fetch(context.Background(), operatorPrincipal(), app.FetchInput{URL: "https://api.example.com/companies",
		Batch: &app.BatchRequest{EnrichRequest: app.EnrichRequest{SchemaID: "theirs"}}})
	is.True(errors.Is(err, ports.ErrNotFound))
	is.Equal(b.checked, 1)
	is.Equal(f.hits, 0) // nothing was downloaded
	is.Equal(b.started, 0)
}
