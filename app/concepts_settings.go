package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// CodeEmbeddingModelLocked (409): a switch of the embedding model while
// concepts of another model exist.
const CodeEmbeddingModelLocked = "embedding_model_locked"

// EmbeddingModelSetting is an organization's embedding-model setting
// (GET/PUT /api/org-keys/embedding-model).
type EmbeddingModelSetting struct {
	// Model is the model semantic ids use; "" when they are off.
	Model string
	// Default says the organization never chose: the server's applies.
	Default      bool
	DefaultModel string
	// Dims is the model's vector size when the catalog knows it.
	Dims         int
	ConceptCount int
}

// EmbeddingModelSetting returns orgID's setting.
func (s *ConceptService) EmbeddingModelSetting(ctx context.Context, orgID string) (EmbeddingModelSetting, error) {
	out := EmbeddingModelSetting{DefaultModel: s.DefaultModel.String()}
	mk, err := s.ModelFor(ctx, orgID, "")
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == CodeSemanticDisabled:
	case err != nil:
		return out, err
	default:
		out.Model = mk.String()
		if s.Settings != nil {
			_, set, err := s.Settings.EmbeddingModel(ctx, orgID)
			if err != nil {
				return out, err
			}
			out.Default = !set
		}
		if info, err := s.embeddingModel(mk); err == nil {
			out.Dims = info.Dims
		}
	}
	_, count, err := s.heldModels(ctx, orgID)
	out.ConceptCount = count
	return out, err
}

// SetEmbeddingModel sets orgID's embedding model; "" clears it (semantic
// ids off). The model must be one the service can embed with; once
// concepts exist it may only be cleared, never switched (409
// embedding_model_locked: the migration routes move concepts).
func (s *ConceptService) SetEmbeddingModel(ctx context.Context, orgID, named string) (EmbeddingModelSetting, error) {
	if s.Settings == nil {
		return EmbeddingModelSetting{}, NotSupported("embedding_model", "this service keeps no embedding-model settings")
	}
	if named != "" {
		mk, err := model.ParseKey(named)
		if err != nil {
			return EmbeddingModelSetting{}, Invalid("embedding_model", "%s", err)
		}
		if err := s.settableModel(ctx, orgID, mk); err != nil {
			return EmbeddingModelSetting{}, err
		}
		named = mk.String()
	}
	held, _, err := s.heldModels(ctx, orgID)
	if err != nil {
		return EmbeddingModelSetting{}, err
	}
	if err := concept.CheckModelSetting(named, held); err != nil {
		return EmbeddingModelSetting{}, (&Error{Kind: ports.ErrConflict, Code: CodeEmbeddingModelLocked,
			Detail: err.Error() + ": clear the setting, or move the concepts with POST /api/semantic-concepts/migration/start"}).at("embedding_model")
	}
	if err := s.Settings.SetEmbeddingModel(ctx, orgID, named); err != nil {
		return EmbeddingModelSetting{}, err
	}
	return s.EmbeddingModelSetting(ctx, orgID)
}

// GetEmbeddingModel is EmbeddingModelSetting for the caller's organization
// (operator).
func (s *ConceptService) GetEmbeddingModel(ctx context.Context, p *access.Principal) (EmbeddingModelSetting, error) {
	if err := access.Authorize(p, access.ActGetEmbeddingModel); err != nil {
		return EmbeddingModelSetting{}, err
	}
	return s.EmbeddingModelSetting(ctx, p.OrgID)
}

// PutEmbeddingModel is SetEmbeddingModel for the caller's organization
// (owner).
func (s *ConceptService) PutEmbeddingModel(ctx context.Context, p *access.Principal, named string) (EmbeddingModelSetting, error) {
	if err := access.Authorize(p, access.ActSetEmbeddingModel); err != nil {
		return EmbeddingModelSetting{}, err
	}
	return s.SetEmbeddingModel(ctx, p.OrgID, named)
}

// settableModel checks that mk is a model the service can embed with for
// orgID. A provider the catalog does not know may be one of the
// organization's own, which the catalog cannot see: it must exist, so that
// a typo is refused now rather than when every resolution fails.
func (s *ConceptService) settableModel(ctx context.Context, orgID string, mk model.Key) error {
	if _, err := s.embeddingModel(mk); err != nil {
		return err
	}
	if s.Catalog == nil {
		return nil
	}
	if _, err := s.Catalog.EmbeddingModel(mk); !errors.Is(err, ports.ErrUnknownModel) {
		return nil
	}
	pr, err := s.Keys.orgProvider(ctx, orgID, mk.Provider)
	if err != nil {
		return err
	}
	if pr == nil {
		return Invalid("embedding_model", "%s cannot embed: no provider %q is configured", mk, mk.Provider)
	}
	return nil
}

// heldModels are the embedding models orgID's concepts are embedded by,
// and how many concepts there are.
func (s *ConceptService) heldModels(ctx context.Context, orgID string) ([]string, int, error) {
	types, err := s.Store.ConceptTypes(ctx, orgID)
	if err != nil {
		return nil, 0, err
	}
	var held []string
	count := 0
	for _, t := range types {
		if t.ConceptCount > 0 {
			held = append(held, t.EmbeddingModel)
			count += t.ConceptCount
		}
	}
	return held, count, nil
}
