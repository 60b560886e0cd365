package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/fetch"
	"github.com/entityenrich/enrich/ports"
)

// Codes of batch fetch failures.
const (
	CodeURLRefused       = "url_refused"
	CodeFetchTooLarge    = "fetch_too_large"
	CodeFetchUnparseable = "fetch_unparseable"
	CodeTooManyEntities  = "too_many_entities"
	CodeFetchFailed      = "fetch_failed"
	CodeFetchTimeout     = "fetch_timeout"
)

// FetchService fetches a batch's entities from a customer's URL for review
// (POST /api/batch/fetch).
type FetchService struct {
	Fetcher ports.EntityFetcher
	// Batches starts the batch a fetch asks for (nil: a fetch only returns
	// the entities).
	Batches BatchStarter
	// MaxEntities is the batch limit (ENRICH_BATCH_MAX_ENTITIES; 0:
	// fetch.DefaultMaxEntities).
	MaxEntities int
	Clock       ports.Clock
}

// BatchStarter starts a batch (BatchService.StartBatch), and checks one
// before its entities are fetched (CheckBatch).
type BatchStarter interface {
	CheckBatch(ctx context.Context, p *access.Principal, req BatchRequest) error
	StartBatch(ctx context.Context, p *access.Principal, req BatchRequest) (*BatchStarted, error)
}

// NewFetchService fetches batches through fetcher and starts them with
// batches (nil: a fetch only returns the entities), up to the batch limit
// of cfg.
func NewFetchService(fetcher ports.EntityFetcher, batches BatchStarter, clock ports.Clock, cfg EnrichConfig) *FetchService {
	return &FetchService{Fetcher: fetcher, Batches: batches, MaxEntities: cfg.BatchMaxEntities, Clock: clock}
}

// FetchAuthInput is the request's auth (the reference's AuthConfig).
type FetchAuthInput struct {
	Type          string
	BearerToken   *string
	APIKeyHeader  *string
	APIKeyValue   *string
	BasicUsername *string
	BasicPassword *string
}

// FetchInput is a fetch request. Batch, when set, starts a batch on the
// fetched entities in the same call: the body of POST /api/batch/start
// without entities (the fetched ones are used).
type FetchInput struct {
	URL   string
	Auth  *FetchAuthInput
	Batch *BatchRequest
}

// FetchResult is the fetched entities.
type FetchResult struct {
	Entities    []json.RawMessage
	Total       int
	FetchTimeMS int64
	Format      fetch.Format
	// Batch is the batch started on the entities (nil: none was asked).
	Batch *BatchStarted
}

// Fetch checks the request, fetches the URL through the port and parses the
// document into entity objects, at most the batch limit.
func (s *FetchService) Fetch(ctx context.Context, p *access.Principal, in FetchInput) (FetchResult, error) {
	if err := access.Authorize(p, access.ActFetchEntities); err != nil {
		return FetchResult{}, err
	}
	if _, err := fetch.CheckURL(in.URL); err != nil {
		return FetchResult{}, Invalid("url", "%v", err)
	}
	auth, err := fetchAuth(in.Auth)
	if err != nil {
		return FetchResult{}, err
	}
	if in.Batch != nil {
		// Checked before the fetch: a caller who may not start the batch
		// fetches nothing.
		if s.Batches == nil {
			return FetchResult{}, notSupported("batch", "starting the batch from batch/fetch is not available here; POST the entities to /api/batch/start")
		}
		if err := access.Authorize(p, access.ActStartBatch); err != nil {
			return FetchResult{}, err
		}
		if len(in.Batch.Entities) > 0 {
			return FetchResult{}, Invalid("batch.entities", "batch.entities: the fetched entities are the batch's; leave entities out")
		}
		// Everything that needs no download is checked before it: another
		// organization's schema_id fetches nothing.
		if err := s.Batches.CheckBatch(ctx, p, *in.Batch); err != nil {
			return FetchResult{}, err
		}
	}
	max := s.MaxEntities
	if max <= 0 {
		max = fetch.DefaultMaxEntities
	}
	start := s.now()
	doc, err := s.Fetcher.Fetch(ctx, ports.FetchRequest{URL: in.URL, Auth: auth})
	elapsed := s.now().Sub(start)
	if err != nil {
		return FetchResult{}, fetchError(err)
	}
	entities, format, err := fetch.Parse(doc.Body, doc.ContentType, max)
	switch {
	case errors.Is(err, fetch.ErrTooManyEntities):
		return FetchResult{}, (&Error{Kind: ports.ErrInvalid, Code: CodeTooManyEntities,
			Detail: "the document holds more than " + strconv.Itoa(max) + " entities, the batch limit"}).at("url")
	case err != nil:
		return FetchResult{}, (&Error{Kind: ports.ErrInvalid, Code: CodeFetchUnparseable, Detail: err.Error()}).at("url")
	}
	out := FetchResult{Entities: entities, Total: len(entities), FetchTimeMS: elapsed.Milliseconds(), Format: format}
	if in.Batch != nil {
		req := *in.Batch
		req.Entities = entities
		if out.Batch, err = s.Batches.StartBatch(ctx, p, req); err != nil {
			return FetchResult{}, err
		}
	}
	return out, nil
}

func (s *FetchService) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

// fetchAuth checks the auth fields its type needs; fields of other types
// are ignored.
func fetchAuth(in *FetchAuthInput) (ports.FetchAuth, error) {
	if in == nil {
		return ports.FetchAuth{Type: fetch.AuthNone}, nil
	}
	t := fetch.AuthType(in.Type)
	if t == "" {
		t = fetch.AuthNone
	}
	if !slices.Contains(fetch.AuthTypes(), t) {
		return ports.FetchAuth{}, Invalid("auth.auth_type", "auth_type must be none, bearer, api_key or basic")
	}
	value := func(field string, v *string, required bool) (string, error) {
		if v == nil || *v == "" {
			if required {
				return "", Invalid("auth."+field, "auth.%s is required for auth_type %s", field, t)
			}
			return "", nil
		}
		if err := fetch.CheckHeaderValue(*v); err != nil {
			return "", Invalid("auth."+field, "auth.%s %v", field, err)
		}
		return *v, nil
	}
	out := ports.FetchAuth{Type: t}
	switch t {
	case fetch.AuthBearer:
		v, err := value("bearer_token", in.BearerToken, true)
		if err != nil {
			return out, err
		}
		out.BearerToken = ports.Secret(v)
	case fetch.AuthAPIKey:
		v, err := value("api_key_value", in.APIKeyValue, true)
		if err != nil {
			return out, err
		}
		out.HeaderValue = ports.Secret(v)
		out.HeaderName = fetch.DefaultAPIKeyHeader
		if in.APIKeyHeader != nil && *in.APIKeyHeader != "" {
			if err := fetch.CheckHeaderName(*in.APIKeyHeader); err != nil {
				return out, Invalid("auth.api_key_header", "auth.api_key_header %v", err)
			}
			out.HeaderName = *in.APIKeyHeader
		}
	case fetch.AuthBasic:
		u, err := value("basic_username", in.BasicUsername, true)
		if err != nil {
			return out, err
		}
		if strings.Contains(u, ":") {
			return out, Invalid("auth.basic_username", "auth.basic_username must not contain a colon")
		}
		pw, err := value("basic_password", in.BasicPassword, false)
		if err != nil {
			return out, err
		}
		out.Username, out.Password = u, ports.Secret(pw)
	}
	return out, nil
}

// fetchError turns the port's errors into answers: the URL's fault is a 400
// naming url, the server's a 502 or 504. The port's detail names neither the
// URL nor the secrets.
func fetchError(err error) error {
	switch {
	case errors.Is(err, ports.ErrFetchRefused):
		return (&Error{Kind: ports.ErrInvalid, Code: CodeURLRefused, Detail: "url refused: " + cause(err, ports.ErrFetchRefused)}).at("url")
	case errors.Is(err, ports.ErrFetchTooLarge):
		return (&Error{Kind: ports.ErrInvalid, Code: CodeFetchTooLarge, Detail: "the document is too large: " + cause(err, ports.ErrFetchTooLarge)}).at("url")
	case errors.Is(err, ports.ErrFetchTimeout):
		return &Error{Kind: ports.ErrFetchTimeout, Code: CodeFetchTimeout, Detail: "fetching the URL timed out: " + cause(err, ports.ErrFetchTimeout)}
	case errors.Is(err, ports.ErrFetchFailed):
		return &Error{Kind: ports.ErrFetchFailed, Code: CodeFetchFailed, Detail: "fetching the URL failed: " + cause(err, ports.ErrFetchFailed)}
	}
	return err
}

// cause is the adapter's reason after the sentinel's text.
func cause(err, kind error) string {
	return strings.TrimPrefix(err.Error(), kind.Error()+": ")
}
