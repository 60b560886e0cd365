package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// An organization's own providers in enrichment: their models are called
// as <provider name>::<model> by that organization only. The model catalog
// (the server's providers) is asked first, so a name the server declares
// always means the server's provider; the organization's providers are
// read only for keys the catalog does not know.

// orgModelInfo describes model m of the organization's provider pr, with
// the capabilities the organization declared (never web search); an
// undeclared price is zero: the organization pays its provider.
func orgModelInfo(pr *orgprovider.Provider, m orgprovider.Model) model.Info {
	info := model.Info{Key: model.Key{Provider: pr.Name, Model: m.Name}, DisplayName: fmt.Sprintf("%s (%s)", m.Name, pr.Name),
		ContextLength: m.ContextLength, ResponseSchema: m.Caps.ResponseSchema, StrictOutput: m.Caps.StrictOutput,
		Vision: m.Caps.Vision, PDFInput: m.Caps.PDFInput, Reasoning: m.Caps.Reasoning, ToolCalls: m.Caps.ToolCalls,
		AudioInput: m.Caps.AudioInput, VideoInput: m.Caps.VideoInput}
	if m.InputPerMTok != nil {
		info.Price.InputPerMTok = *m.InputPerMTok
	}
	if m.OutputPerMTok != nil {
		info.Price.OutputPerMTok = *m.OutputPerMTok
	}
	return info
}

// OrgModels lists the models of the organization's enabled providers, by
// provider name then in the provider's order.
func (r *KeyRing) OrgModels(ctx context.Context, orgID string) ([]model.Info, error) {
	if r.Endpoints == nil {
		return nil, nil
	}
	ps, err := r.Endpoints.ListProviders(ctx, orgID)
	if err != nil {
		return nil, err
	}
	var out []model.Info
	for _, pr := range ps {
		if _, server := r.Providers.Provider(pr.Name); !pr.Enabled || server {
			continue
		}
		for _, m := range pr.Models {
			out = append(out, orgModelInfo(pr, m))
		}
	}
	return out, nil
}

// OrgModel returns model k of the organization's enabled provider named
// k.Provider; an error wrapping ErrUnknownModel when there is none.
func (r *KeyRing) OrgModel(ctx context.Context, orgID string, k model.Key) (model.Info, error) {
	pr, err := r.orgProvider(ctx, orgID, k.Provider)
	if err != nil {
		return model.Info{}, err
	}
	if pr == nil || !pr.Enabled {
		return model.Info{}, fmt.Errorf("%w %s", ports.ErrUnknownModel, k)
	}
	m, ok := pr.Model(k.Model)
	if !ok {
		return model.Info{}, fmt.Errorf("%w %s", ports.ErrUnknownModel, k)
	}
	return orgModelInfo(pr, m), nil
}

// orgProvider returns the organization's provider named name; nil when it
// has none (or the ring keeps none).
func (r *KeyRing) orgProvider(ctx context.Context, orgID, name string) (*orgprovider.Provider, error) {
	if r.Endpoints == nil || orgID == "" {
		return nil, nil
	}
	pr, err := r.Endpoints.ProviderByName(ctx, orgID, name)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, nil
	}
	return pr, err
}

// endpointCredential is the credential of calls to the organization's
// provider named name: nil when it has none (a provider unknown to all,
// as before). A disabled provider, or one the run already gave up on
// (exclude), has no usable key.
func (r *KeyRing) endpointCredential(ctx context.Context, orgID, name string, exclude []string) (*ports.Credential, error) {
	pr, err := r.orgProvider(ctx, orgID, name)
	if err != nil || pr == nil {
		return nil, err
	}
	usable := pr.Enabled
	for _, x := range exclude {
		usable = usable && x != pr.ID
	}
	if !usable {
		return nil, &Error{Kind: ports.ErrInvalid, Code: "no_usable_provider_key", Field: "models",
			Detail: (&rotation.NoUsableKeyError{Provider: name}).Error()}
	}
	ep := endpointOf(r.Cipher, pr)
	return &ports.Credential{KeyID: pr.ID, Version: pr.Version, Source: rotation.Organization, Open: ep.Open, Endpoint: &ep}, nil
}

// knownModelFor is knownModel for an organization: a key the catalog does
// not know may name a model of one of its own providers.
func (s *ModelService) knownModelFor(ctx context.Context, orgID, field, k string) (model.Info, error) {
	m, err := s.knownModel(field, k)
	if err == nil || s.Keys == nil {
		return m, err
	}
	key, perr := model.ParseKey(k)
	if perr != nil {
		return m, err
	}
	om, oerr := s.Keys.OrgModel(ctx, orgID, key)
	switch {
	case oerr == nil:
		return om, nil
	case errors.Is(oerr, ports.ErrUnknownModel):
		return m, err
	}
	return model.Info{}, oerr
}

// orgModels lists the organization's own providers' models.
func (s *ModelService) orgModels(ctx context.Context, orgID string) ([]model.Info, error) {
	if s.Keys == nil {
		return nil, nil
	}
	return s.Keys.OrgModels(ctx, orgID)
}
