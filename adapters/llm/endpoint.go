package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// Organizations' own providers (ports.Endpoint): their base URLs come from
// customers, so every request to them goes through the registry's guarded
// client (Config.GuardedHTTPClient), never the operators' one.

var _ ports.ProviderProbe = (*Registry)(nil)

// endpointTypeOpenAICompatible is the endpoint type of domain/orgprovider
// (kept as a string: adapters do not import the domain's rules).
const endpointTypeOpenAICompatible = "openai_compatible"

// GuardedHTTPClientFor is GuardedHTTPClient with netguard's options: an
// operator's tests may let loopback ports through (AllowLoopbackPorts).
func GuardedHTTPClientFor(o netguard.Options) *http.Client {
	return netguard.NewClient(o, defaultTransport(), maxRedirects)
}

// endpointConfig is the provider configuration of an endpoint: always a
// customer's, so its client is the guarded one.
func endpointConfig(e ports.Endpoint) (ProviderConfig, error) {
	if e.Type != endpointTypeOpenAICompatible {
		return ProviderConfig{}, fmt.Errorf("llm: endpoint type %q not supported", e.Type)
	}
	return ProviderConfig{Name: e.ProviderID, Type: TypeOpenAI, BaseURL: e.BaseURL, Customer: true}, nil
}

// endpointToken opens the endpoint's key; "" when it takes none.
func endpointToken(e ports.Endpoint) (string, error) {
	if e.Open == nil {
		return "", nil
	}
	s, err := e.Open()
	if err != nil {
		return "", fmt.Errorf("llm: open the key of provider %s: %w", e.ProviderID, err)
	}
	return s.Reveal(), nil
}

// resolve finds the entry and client of a call: an organization's endpoint
// when the credential names one, else a model of the registry.
func (r *Registry) resolve(req ports.LLMRequest) (*entry, llms.Model, error) {
	if c := req.Credential; c != nil && c.Endpoint != nil {
		return r.endpointClient(req.Model, *c.Endpoint)
	}
	e, err := r.entry(req.Model)
	if err != nil {
		return nil, nil, err
	}
	client, err := r.client(e, req.Credential)
	if err != nil {
		return nil, nil, err
	}
	return e, client, nil
}

// endpointClient returns the cached client of model k on endpoint ep,
// building it on first use (per provider version: a changed URL or key
// builds a new one; Forget(ProviderID) drops them).
func (r *Registry) endpointClient(k model.Key, ep ports.Endpoint) (*entry, llms.Model, error) {
	e, err := endpointEntry(k, ep)
	if err != nil {
		return nil, nil, err
	}
	m, err := r.clients.get(clientKey{model: k, keyID: ep.ProviderID, version: ep.Version}, func() (llms.Model, error) {
		token, err := endpointToken(ep)
		if err != nil {
			return nil, err
		}
		m, err := newClient(e, token, r.guarded)
		if err != nil {
			return nil, fmt.Errorf("llm: %s: %w", k, err)
		}
		return m, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return e, m, nil
}

// endpointEntry is the entry of model k on endpoint ep. It carries the
// model's declared capabilities, so that the structured-output channel is
// used where the organization says the endpoint has it (an
// OpenAI-compatible endpoint speaks that protocol).
func endpointEntry(k model.Key, ep ports.Endpoint) (*entry, error) {
	p, err := endpointConfig(ep)
	if err != nil {
		return nil, err
	}
	info, ok := ep.Models[k.Model]
	if !ok {
		info = model.Info{Key: k}
	}
	info.Key = k
	return &entry{info: info, prov: &p}, nil
}

// TestEndpoint makes a cheap real call to ep (ports.ProviderProbe): a
// completion of at most 16 tokens with model, or, when model is "", the
// endpoint's model list. A refused address is ErrForbiddenDestination
// (a ports.ErrDestinationRefused): nothing was sent.
func (r *Registry) TestEndpoint(ctx context.Context, ep ports.Endpoint, modelName string) error {
	if modelName == "" {
		_, err := r.ListEndpointModels(ctx, ep)
		return err
	}
	k := model.Key{Provider: ep.ProviderID, Model: modelName}
	e, err := endpointEntry(k, ep)
	if err != nil {
		return err
	}
	token, err := endpointToken(ep)
	if err != nil {
		return err
	}
	m, err := newClient(e, token, r.guarded)
	if err != nil {
		return fmt.Errorf("llm: %s: %w", k, err)
	}
	return r.testCall(ctx, k, m)
}

// maxModelList bounds the model list read from an endpoint.
const maxModelList = 4 << 20

// ListEndpointModels returns the model ids of GET {base_url}/models, the
// OpenAI protocol's {"data": [{"id": ...}]} (ports.ProviderProbe).
func (r *Registry) ListEndpointModels(ctx context.Context, ep ports.Endpoint) ([]string, error) {
	k := model.Key{Provider: ep.ProviderID, Model: "models"}
	if _, err := endpointConfig(ep); err != nil {
		return nil, err
	}
	token, err := endpointToken(ep)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, min(r.timeout, 30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.BaseURL+"/models", nil)
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %w: %w", k, ports.ErrInvalid, err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := statusDoer{hc: r.guarded, keyless: token == ""}.Do(req)
	if err != nil {
		return nil, classify(ctx, k, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelList+1))
	if err != nil {
		return nil, classify(ctx, k, err)
	}
	if len(body) > maxModelList {
		return nil, fmt.Errorf("llm: %s: %w: the model list is larger than %d bytes", k, ports.ErrLLMUnavailable, maxModelList)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Data == nil {
		return nil, fmt.Errorf("llm: %s: %w: %w", k, ports.ErrLLMUnavailable, errModelList)
	}
	out := make([]string, 0, len(list.Data))
	for _, d := range list.Data {
		if d.ID != "" {
			out = append(out, d.ID)
		}
	}
	return out, nil
}

// errModelList is an answer to GET /models that is not OpenAI's list.
var errModelList = errors.New(`the answer to GET /models is not a model list ({"data": [{"id": ...}]})`)
