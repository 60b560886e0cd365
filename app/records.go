package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// RecordService reads enrichment records.
type RecordService struct {
	Records ports.RecordStore
}

// Get returns one of the organization's records.
func (s *RecordService) Get(ctx context.Context, p *access.Principal, id string) (*enrichment.Record, error) {
	if err := access.Authorize(p, access.ActGetRecord); err != nil {
		return nil, err
	}
	r, err := s.Records.GetRecord(ctx, p.OrgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "record %s not found", id)
	}
	return r, err
}

// List returns a page of the organization's records, newest first.
func (s *RecordService) List(ctx context.Context, p *access.Principal, f ports.RecordFilter, pr page.Request) (page.Result[*enrichment.Record], error) {
	if err := access.Authorize(p, access.ActListRecords); err != nil {
		return page.Result[*enrichment.Record]{}, err
	}
	switch f.Type {
	case "", enrichment.RecordEnrichment:
	default:
		return page.Result[*enrichment.Record]{}, Invalid("type", "unknown record type %q (want enrichment)", f.Type)
	}
	return s.Records.ListRecords(ctx, p.OrgID, f, pr)
}
