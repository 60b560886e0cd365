package app

import (
	"context"
	"errors"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/ports"
)

// AddModel adds a model to a provider.
func (s *OrgProviderService) AddModel(ctx context.Context, p *access.Principal, id string, in NewOrgModel) (*orgprovider.Provider, orgprovider.Model, error) {
	if err := access.Authorize(p, access.ActAddOrgProviderModel); err != nil {
		return nil, orgprovider.Model{}, err
	}
	now := s.Clock.Now()
	m, err := s.newModel(in, "", now)
	if err != nil {
		return nil, m, err
	}
	pr, err := s.Store.UpdateProvider(ctx, p.OrgID, id, func(pr *orgprovider.Provider) error {
		pr.UpdatedAt = now
		return pr.AddModel(m)
	})
	if err != nil {
		if errors.Is(err, orgprovider.ErrDuplicateModel) || errors.Is(err, orgprovider.ErrTooManyModels) {
			return nil, m, modelError(err, "")
		}
		return nil, m, s.notFound(err, id)
	}
	return publicProvider(pr), m, nil
}

// modelError maps the domain's refusals of a model to add.
func modelError(err error, prefix string) error {
	switch {
	case errors.Is(err, orgprovider.ErrDuplicateModel):
		return (&Error{Kind: ports.ErrConflict, Code: CodeModelExists, Detail: prefix + "name: the provider already lists this model"}).at(prefix + "name")
	case errors.Is(err, orgprovider.ErrTooManyModels):
		return Invalid(strings.TrimSuffix(prefix, "."), "a provider lists at most %d models", orgprovider.MaxModels)
	}
	return providerFieldError(err, prefix)
}

// OrgModelChange changes a model; nil fields stay as they are.
type OrgModelChange struct {
	Name          *string
	ContextLength *int
	// SetInputPrice and SetOutputPrice apply the prices (nil: none).
	SetInputPrice, SetOutputPrice bool
	InputPrice, OutputPrice       *float64
	// Caps changes the declared capabilities named (nil keeps one).
	Caps OrgCapsChange
}

// OrgCapsChange changes declared capabilities; nil fields stay as they are.
type OrgCapsChange struct {
	ResponseSchema, StrictOutput, Vision, PDFInput *bool
	Reasoning, ToolCalls, AudioInput, VideoInput   *bool
}

func (c OrgCapsChange) apply(caps *orgprovider.Caps) {
	for _, f := range []struct {
		set *bool
		to  *bool
	}{{c.ResponseSchema, &caps.ResponseSchema}, {c.StrictOutput, &caps.StrictOutput}, {c.Vision, &caps.Vision},
		{c.PDFInput, &caps.PDFInput}, {c.Reasoning, &caps.Reasoning}, {c.ToolCalls, &caps.ToolCalls},
		{c.AudioInput, &caps.AudioInput}, {c.VideoInput, &caps.VideoInput}} {
		if f.set != nil {
			*f.to = *f.set
		}
	}
}

// findModel returns the organization's provider that lists model id.
func (s *OrgProviderService) findModel(ctx context.Context, orgID, id string) (*orgprovider.Provider, orgprovider.Model, error) {
	ps, err := s.Store.ListProviders(ctx, orgID)
	if err != nil {
		return nil, orgprovider.Model{}, err
	}
	for _, p := range ps {
		if m, ok := p.ModelByID(id); ok {
			return p, m, nil
		}
	}
	return nil, orgprovider.Model{}, modelNotFound(id)
}

func modelNotFound(id string) error {
	return coded(ports.ErrNotFound, "not_found", "model %s not found", id)
}

// GetModel returns one of the organization's providers' models, with its
// provider.
func (s *OrgProviderService) GetModel(ctx context.Context, p *access.Principal, id string) (*orgprovider.Provider, orgprovider.Model, error) {
	if err := access.Authorize(p, access.ActGetOrgProvider); err != nil {
		return nil, orgprovider.Model{}, err
	}
	pr, m, err := s.findModel(ctx, p.OrgID, id)
	return shownTo(p, pr), m, err
}

// UpdateModel renames a model or changes its context size, prices or
// declared capabilities.
func (s *OrgProviderService) UpdateModel(ctx context.Context, p *access.Principal, id string, ch OrgModelChange) (*orgprovider.Provider, orgprovider.Model, error) {
	if err := access.Authorize(p, access.ActUpdateOrgProvider); err != nil {
		return nil, orgprovider.Model{}, err
	}
	var in, out *int64
	var err error
	if in, err = micro("input_price", ch.InputPrice); err != nil {
		return nil, orgprovider.Model{}, err
	}
	if out, err = micro("output_price", ch.OutputPrice); err != nil {
		return nil, orgprovider.Model{}, err
	}
	pr, _, err := s.findModel(ctx, p.OrgID, id)
	if err != nil {
		return nil, orgprovider.Model{}, err
	}
	now := s.Clock.Now()
	var changed orgprovider.Model
	pr, err = s.Store.UpdateProvider(ctx, p.OrgID, pr.ID, func(u *orgprovider.Provider) error {
		m, ok := u.ModelByID(id)
		if !ok {
			return modelNotFound(id) // removed meanwhile
		}
		if ch.Name != nil {
			m.Name = strings.TrimSpace(*ch.Name)
		}
		if ch.ContextLength != nil {
			m.ContextLength = *ch.ContextLength
		}
		if ch.SetInputPrice {
			m.InputPerMTok = in
		}
		if ch.SetOutputPrice {
			m.OutputPerMTok = out
		}
		ch.Caps.apply(&m.Caps)
		if err := u.ReplaceModel(m); err != nil {
			return err
		}
		u.UpdatedAt, changed = now, m
		return nil
	})
	if err != nil {
		if errors.Is(err, orgprovider.ErrDuplicateModel) || errors.As(err, new(*orgprovider.FieldError)) {
			return nil, orgprovider.Model{}, modelError(err, "")
		}
		return nil, orgprovider.Model{}, s.notFound(err, pr.ID)
	}
	s.forget(pr.ID)
	return publicProvider(pr), changed, nil
}

// DeleteModel removes a model from its provider.
func (s *OrgProviderService) DeleteModel(ctx context.Context, p *access.Principal, id string) error {
	if err := access.Authorize(p, access.ActUpdateOrgProvider); err != nil {
		return err
	}
	pr, _, err := s.findModel(ctx, p.OrgID, id)
	if err != nil {
		return err
	}
	now := s.Clock.Now()
	_, err = s.Store.UpdateProvider(ctx, p.OrgID, pr.ID, func(u *orgprovider.Provider) error {
		if err := u.RemoveModel(id); err != nil {
			return modelNotFound(id) // removed meanwhile
		}
		u.UpdatedAt = now
		return nil
	})
	if err != nil {
		return s.notFound(err, pr.ID)
	}
	s.forget(pr.ID)
	return nil
}
