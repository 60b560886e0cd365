package app

import (
	"context"
	"errors"
	"slices"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// RecordService reads enrichment records.
type RecordService struct {
	Records ports.RecordStore
	// Clock stamps soft deletes (nil: the system clock).
	Clock ports.Clock
}

// NewRecordService serves the records in records.
func NewRecordService(records ports.RecordStore, clock ports.Clock) *RecordService {
	return &RecordService{Records: records, Clock: clock}
}

// Get returns one of the organization's records.
func (s *RecordService) Get(ctx context.Context, p *access.Principal, id string) (*enrichment.Record, error) {
	return s.get(ctx, p, id, false)
}

// GetAcross returns any organization's record (the reference's all_orgs:
// system administrators).
func (s *RecordService) GetAcross(ctx context.Context, p *access.Principal, id string) (*enrichment.Record, error) {
	return s.get(ctx, p, id, true)
}

func (s *RecordService) get(ctx context.Context, p *access.Principal, id string, all bool) (*enrichment.Record, error) {
	if err := access.Authorize(p, access.ActGetRecord); err != nil {
		return nil, err
	}
	org, err := orgScope(p, all, access.ActReadAllRecords)
	if err != nil {
		return nil, err
	}
	r, err := s.Records.GetRecord(ctx, org, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "record %s not found", id)
	}
	return r, err
}

// RecordQuery narrows a record listing: the store's filter plus Success
// (nil: any). Every stored record succeeded (a failed model stores none), so
// Success false lists nothing.
type RecordQuery struct {
	ports.RecordFilter
	Success *bool
	// AllOrgs lists every organization's records (the reference's
	// all_orgs: system administrators).
	AllOrgs bool
}

// orgScope is the organization a record call reaches: the caller's own, or
// with all (a system administrator's all_orgs, authorized by act) every one.
func orgScope(p *access.Principal, all bool, act access.Action) (string, error) {
	if !all {
		return p.OrgID, nil
	}
	if err := access.Authorize(p, act); err != nil {
		return "", err
	}
	return ports.AllOrgs, nil
}

// List returns a page of the organization's records, newest first, with
// the total count.
func (s *RecordService) List(ctx context.Context, p *access.Principal, q RecordQuery, pr page.Request) (page.Result[*enrichment.Record], error) {
	if err := access.Authorize(p, access.ActListRecords); err != nil {
		return page.Result[*enrichment.Record]{}, err
	}
	if q.Type != "" && !slices.Contains(enrichment.RecordTypes(), q.Type) {
		return page.Result[*enrichment.Record]{}, Invalid("type", "unknown record type %q (want enrichment, schema_generation, schema_edit, playground, ambiguity_analysis or fusion)", q.Type)
	}
	org, err := orgScope(p, q.AllOrgs, access.ActReadAllRecords)
	if err != nil {
		return page.Result[*enrichment.Record]{}, err
	}
	if q.Success != nil && !*q.Success {
		return page.Result[*enrichment.Record]{}, nil
	}
	return s.Records.ListRecords(ctx, org, q.RecordFilter, pr)
}
