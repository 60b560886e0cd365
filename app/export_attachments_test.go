package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/model"
)

// PlannedModels plans req as a job's submit does and returns the models
// the plan calls.
func (s *Enricher) PlannedModels(ctx context.Context, orgID string, req EnrichRequest) ([]model.Info, error) {
	pl, err := s.prepare(ctx, orgID, req)
	if err != nil {
		return nil, err
	}
	return pl.models, nil
}
