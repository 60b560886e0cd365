package ports

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/orgprovider"
)

// ProviderStore keeps organizations' own providers (orgprovider). Every
// call names the organization: another organization's provider is
// ErrNotFound. Keys are stored sealed (see Cipher).
type ProviderStore interface {
	// CreateProvider stores p; an existing id, or a name the organization
	// already uses, is ErrConflict.
	CreateProvider(ctx context.Context, p *orgprovider.Provider) error
	GetProvider(ctx context.Context, orgID, id string) (*orgprovider.Provider, error)
	// ProviderByName returns the organization's provider named name.
	ProviderByName(ctx context.Context, orgID, name string) (*orgprovider.Provider, error)
	// ListProviders returns the organization's providers by name.
	ListProviders(ctx context.Context, orgID string) ([]*orgprovider.Provider, error)
	// AllProviders returns every organization's providers, by id
	// (operators' maintenance: re-encryption).
	AllProviders(ctx context.Context) ([]*orgprovider.Provider, error)
	// UpdateProvider loads the provider, calls fn, and stores the result
	// atomically; fn's error is returned as is and nothing is written. A
	// rename to a name the organization already uses is ErrConflict. The
	// id, organization and creation time cannot change.
	UpdateProvider(ctx context.Context, orgID, id string, fn func(*orgprovider.Provider) error) (*orgprovider.Provider, error)
	// DeleteProvider removes the provider and its models; ErrNotFound when
	// the organization has no such provider.
	DeleteProvider(ctx context.Context, orgID, id string) error
}

// Endpoint is an organization's own provider as a call reaches it: a
// customer's URL, so every request to it goes through the SSRF guard.
type Endpoint struct {
	// ProviderID and Version name the provider's configuration: a
	// provider client built on an older version is not reused.
	ProviderID string
	Version    int
	Type       string
	BaseURL    string
	// Open returns the key; nil for an endpoint that takes none.
	Open func() (Secret, error)
	// Models are the provider's models by name, with the capabilities the
	// organization declared (the structured-output channel is used where
	// it says so).
	Models map[string]model.Info
}

// ProviderProbe reaches an organization's endpoint outside of enrichment,
// through the SSRF guard: a cheap real call, and the endpoint's model list.
type ProviderProbe interface {
	// TestEndpoint makes a cheap real call: a tiny completion with model,
	// or the model list when model is "".
	TestEndpoint(ctx context.Context, e Endpoint, model string) error
	// ListEndpointModels returns the ids of GET {base_url}/models.
	ListEndpointModels(ctx context.Context, e Endpoint) ([]string, error)
}

// ErrDestinationRefused means a customer's URL led to an address the SSRF
// guard refuses: nothing was sent to it.
var ErrDestinationRefused = errors.New("destination refused")
