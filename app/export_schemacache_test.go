package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/schema"
)

// PlannedSchema plans req as every job start does (Start, Sync, a batch, a
// worker taking a job over) and returns the schema the plan runs on.
func (s *Enricher) PlannedSchema(ctx context.Context, orgID string, req EnrichRequest) (*schema.Schema, error) {
	pl, err := s.prepare(ctx, orgID, req)
	if err != nil {
		return nil, err
	}
	return pl.schema, nil
}
