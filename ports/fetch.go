package ports

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/fetch"
)

// EntityFetcher fetches the document a batch's entities are read from
// (POST /api/batch/fetch): one GET of a customer's URL, through an SSRF-safe
// client, within size, time and redirect limits. It does not follow
// pagination and does not parse the document (domain/fetch does).
type EntityFetcher interface {
	Fetch(ctx context.Context, req FetchRequest) (FetchedDocument, error)
}

// FetchRequest is one fetch. The secrets are Secrets, so that nothing that
// prints the request prints them.
type FetchRequest struct {
	URL  string
	Auth FetchAuth
}

// FetchAuth is how a fetch authenticates to the URL's server.
type FetchAuth struct {
	Type fetch.AuthType
	// BearerToken goes as Authorization: Bearer (AuthBearer).
	BearerToken Secret
	// HeaderName and HeaderValue are the API key's header (AuthAPIKey).
	HeaderName  string
	HeaderValue Secret
	// Username and Password go as HTTP basic authentication (AuthBasic).
	Username string
	Password Secret
}

// FetchedDocument is what the URL answered.
type FetchedDocument struct {
	Body        []byte
	ContentType string
}

// Errors of EntityFetcher.Fetch, wrapped with detail fit for the caller (it
// never holds the URL's query or the secrets).
var (
	// ErrFetchRefused: the URL, or a redirect, leads to an address the SSRF
	// guard refuses.
	ErrFetchRefused = errors.New("fetch refused")
	// ErrFetchTooLarge: the document is larger than the fetcher's limit.
	ErrFetchTooLarge = errors.New("fetched document too large")
	// ErrFetchFailed: the server could not be reached, answered with an
	// error status, or redirected too often.
	ErrFetchFailed = errors.New("fetch failed")
	// ErrFetchTimeout: the fetch did not finish within the fetcher's limit.
	ErrFetchTimeout = errors.New("fetch timed out")
)
