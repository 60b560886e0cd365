package app

import (
	"context"
	"slices"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// CostService answers the cost analytics: totals of the usage ledger per
// period, per model and overall.
type CostService struct {
	// Ledger is the usage ledger (nil: the store keeps none, and every
	// total is zero).
	Ledger ports.UsageLedger
	Clock  ports.Clock
}

// NewCostService answers the cost analytics from ledger (nil: none kept).
func NewCostService(ledger ports.UsageLedger, clock ports.Clock) *CostService {
	return &CostService{Ledger: ledger, Clock: clock}
}

// CostQuery narrows the analytics. The period is [Start, End); a missing
// Start is the beginning of the ledger, a missing End is now. OrgID (another
// organization) and AllOrgs are for system administrators.
type CostQuery struct {
	Start, End *time.Time
	OrgID      string
	AllOrgs    bool
	// RecordType narrows to the calls of one kind of work (the reference's
	// record types: enrichment, schema_generation, ...).
	RecordType string
}

// maxCostGroups bounds what one answer lists (models, periods).
const maxCostGroups = 10_000

// scope checks the caller may see what q asks and turns q into a ledger
// scope.
func (s *CostService) scope(p *access.Principal, q CostQuery) (usage.Scope, error) {
	if err := access.Authorize(p, access.ActViewCosts); err != nil {
		return usage.Scope{}, err
	}
	if err := checkText("organization_id", q.OrgID); err != nil {
		return usage.Scope{}, err
	}
	sc := usage.Scope{OrgID: p.OrgID, To: s.Clock.Now().Add(time.Nanosecond)}
	if q.AllOrgs || (q.OrgID != "" && q.OrgID != p.OrgID) {
		if err := access.Authorize(p, access.ActViewAllCosts); err != nil {
			return usage.Scope{}, err
		}
		sc.OrgID = q.OrgID
		if q.AllOrgs {
			sc.OrgID = ""
		}
	}
	if q.Start != nil {
		sc.From = *q.Start
	}
	if q.End != nil {
		sc.To = *q.End
	}
	if !sc.To.After(sc.From) {
		return usage.Scope{}, Invalid("end_date", "end_date must be after start_date")
	}
	if q.RecordType != "" {
		if !slices.Contains(enrichment.RecordTypes(), enrichment.RecordType(q.RecordType)) {
			return usage.Scope{}, Invalid("record_type", "record_type must be one of %v", enrichment.RecordTypes())
		}
		sc.Task = q.RecordType
	}
	return sc, nil
}

// CostSummary is the ledger's total over a period, with the models that
// cost most and were used most (empty when nothing was called).
type CostSummary struct {
	Total         usage.Total
	MostExpensive string
	MostUsed      string
}

// Summary totals the calls in the query's period.
func (s *CostService) Summary(ctx context.Context, p *access.Principal, q CostQuery) (CostSummary, error) {
	sc, err := s.scope(p, q)
	if err != nil {
		return CostSummary{}, err
	}
	models, err := s.bounded(ctx, sc, usage.ByModel)
	if err != nil {
		return CostSummary{}, err
	}
	return summarize(models), nil
}

func summarize(models []usage.Total) CostSummary {
	out := CostSummary{Total: usage.Sum(models)}
	var costly, used usage.Total
	for _, m := range models {
		if m.Cost > costly.Cost || out.MostExpensive == "" {
			costly, out.MostExpensive = m, m.Key
		}
		if m.Requests > used.Requests || out.MostUsed == "" {
			used, out.MostUsed = m, m.Key
		}
	}
	return out
}

// Stats totals the calls per calendar period (day, week or month; day when
// empty), oldest first.
func (s *CostService) Stats(ctx context.Context, p *access.Principal, q CostQuery, groupBy string) ([]usage.Total, error) {
	sc, err := s.scope(p, q)
	if err != nil {
		return nil, err
	}
	g := usage.ByDay
	if groupBy != "" {
		if g, err = usage.ParsePeriod(groupBy); err != nil {
			return nil, Invalid("group_by", "group_by must be day, week or month")
		}
	}
	return s.bounded(ctx, sc, g)
}

// ByModel totals the calls per model, costliest first.
func (s *CostService) ByModel(ctx context.Context, p *access.Principal, q CostQuery) ([]usage.Total, error) {
	sc, err := s.scope(p, q)
	if err != nil {
		return nil, err
	}
	ts, err := s.bounded(ctx, sc, usage.ByModel)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ts, func(a, b usage.Total) int { return int(min(max(b.Cost-a.Cost, -1), 1)) })
	return ts, nil
}

// bounded totals sc by g, refusing answers too large to send; a service
// whose store keeps no ledger has nothing to total.
func (s *CostService) bounded(ctx context.Context, sc usage.Scope, g usage.Group) ([]usage.Total, error) {
	if s.Ledger == nil {
		return []usage.Total{}, nil
	}
	ts, err := s.Ledger.AggregateUsage(ctx, sc, g)
	if err != nil {
		return nil, err
	}
	if len(ts) > maxCostGroups {
		return nil, Invalid("start_date", "the period holds more than %d groups; narrow it", maxCostGroups)
	}
	return ts, nil
}

// CostPreset is a preset period's summary, daily figures and models.
type CostPreset struct {
	Preset     string
	Start, End time.Time
	Summary    CostSummary
	Daily      []usage.Total
	Models     []usage.Total
}

// Preset answers a preset period (7d, 30d, 90d, all) ending now.
func (s *CostService) Preset(ctx context.Context, p *access.Principal, name string, q CostQuery) (CostPreset, error) {
	from, to, err := usage.Preset(name, s.Clock.Now())
	if err != nil {
		return CostPreset{}, Invalid("preset", "preset must be 7d, 30d, 90d or all")
	}
	q.Start, q.End = &from, &to
	out := CostPreset{Preset: name, Start: from, End: to}
	if out.Models, err = s.ByModel(ctx, p, q); err != nil {
		return CostPreset{}, err
	}
	out.Summary = summarize(out.Models)
	if out.Daily, err = s.Stats(ctx, p, q, string(usage.ByDay)); err != nil {
		return CostPreset{}, err
	}
	return out, nil
}

// Performance is the calls' success and speed, overall and per model.
type Performance struct {
	Total  usage.Total
	Models []usage.Total
}

// Performance totals the calls' outcomes and latencies per model.
func (s *CostService) Performance(ctx context.Context, p *access.Principal, q CostQuery) (Performance, error) {
	models, err := s.ByModel(ctx, p, q)
	if err != nil {
		return Performance{}, err
	}
	return Performance{Total: usage.Sum(models), Models: models}, nil
}

// PerformancePreset is Performance over a preset period ending now.
func (s *CostService) PerformancePreset(ctx context.Context, p *access.Principal, name string, q CostQuery) (Performance, error) {
	from, to, err := usage.Preset(name, s.Clock.Now())
	if err != nil {
		return Performance{}, Invalid("preset", "preset must be 7d, 30d, 90d or all")
	}
	q.Start, q.End = &from, &to
	return s.Performance(ctx, p, q)
}
