package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/ports"
)

// ModelPicker resolves auto for every task: the organization's pinned
// default while it can be called, else the best model it can call
// (modelsel.SelectAvailable).
type ModelPicker struct {
	Catalog ports.ModelCatalog
	// Keys says which providers an organization can call (nil: all).
	Keys *KeyRing
	// Orgs keeps the pinned defaults (nil: none).
	Orgs ports.OrgStore
}

// Pick resolves auto for task. No eligible model is a 400
// no_capable_default_model whose detail says "auto-select" (the
// reference's clients look for it).
func (m *ModelPicker) Pick(ctx context.Context, orgID, task string, n modelsel.Needs) (modelsel.Pick, error) {
	usable, err := m.Usable(ctx, orgID)
	if err != nil {
		return modelsel.Pick{}, err
	}
	pinned, err := m.Pinned(ctx, orgID)
	if err != nil {
		return modelsel.Pick{}, err
	}
	p, err := modelsel.SelectAvailable(m.Catalog.Models(), usable, pinned[task], n)
	if err != nil {
		return modelsel.Pick{}, coded(ports.ErrInvalid, "no_capable_default_model",
			"auto-select found no %s model with a usable provider key that satisfies the request (web search: %v)", task, n.WebSearch)
	}
	return p, nil
}

// Usable says which providers orgID can call now.
func (m *ModelPicker) Usable(ctx context.Context, orgID string) (func(string) bool, error) {
	if m.Keys == nil {
		return func(string) bool { return true }, nil
	}
	return m.Keys.Usable(ctx, orgID)
}

// Pinned returns the organization's pinned default models by task.
func (m *ModelPicker) Pinned(ctx context.Context, orgID string) (map[string]string, error) {
	if m.Orgs == nil {
		return nil, nil
	}
	o, err := m.Orgs.GetOrg(ctx, orgID)
	if err != nil {
		return nil, err
	}
	return o.ModelDefaults, nil
}
