package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/ports"
)

// ModelPicker resolves auto for every task: the organization's pinned
// default (a catalog model, or one of its own providers' models) while it
// can be called, else the best catalog model it can call
// (modelsel.SelectOwn).
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
	own, err := m.ownPinned(ctx, orgID, pinned[task])
	if err != nil {
		return modelsel.Pick{}, err
	}
	p, err := modelsel.SelectOwn(m.Catalog.Models(), own, usable, pinned[task], n)
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

// ownPinned returns the organization's own model that pinned names, when
// pinned is not a catalog model; none otherwise (or when it names none of
// the organization's enabled providers' models any more).
func (m *ModelPicker) ownPinned(ctx context.Context, orgID, pinned string) ([]model.Info, error) {
	if pinned == "" || m.Keys == nil {
		return nil, nil
	}
	key, err := model.ParseKey(pinned)
	if err != nil {
		return nil, nil
	}
	if _, err := m.Catalog.Model(key); err == nil {
		return nil, nil
	}
	om, err := m.Keys.OrgModel(ctx, orgID, key)
	switch {
	case errors.Is(err, ports.ErrUnknownModel):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return []model.Info{om}, nil
}
