package app

import (
	"context"
	"errors"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// The codes of the feed's refusals (HTTP 409).
const (
	CodeAckBeyondDelivered = "ack_beyond_delivered"
	CodeDeltaNotDelivered  = "delta_not_delivered"
	CodeDeltaAcked         = "delta_already_acked"
	CodeFeedBusy           = "feed_busy"
)

// MaxApplyErrorBytes bounds the error text a consumer reports; a longer
// one is cut at a character boundary.
const MaxApplyErrorBytes = 8 << 10

// FeedService serves a registration's delta feed (WIRE §8.4, §8.5, §8.7):
// claims and reads, acks, purges, the summary and the quarantine. A
// database credential's token may use the feed actions on its own
// registration (access.AuthorizeDatabase).
type FeedService struct {
	Feed  ports.FeedStore
	Clock ports.Clock
	IDs   ports.IDs
}

// NewFeedService returns a FeedService.
func NewFeedService(feed ports.FeedStore, clock ports.Clock, ids ports.IDs) *FeedService {
	return &FeedService{Feed: feed, Clock: clock, IDs: ids}
}

// feedError gives the feed's domain refusals their status and code.
func feedError(err error) error {
	if _, ok := AsError(err); ok || err == nil {
		return err
	}
	var pe *delta.ParamError
	switch {
	case errors.As(err, &pe):
		return Invalid(pe.Field, "%s", pe.Error())
	case errors.Is(err, delta.ErrAckBeyondDelivered):
		return coded(ports.ErrConflict, CodeAckBeyondDelivered, "%s", err.Error())
	case errors.Is(err, delta.ErrNotDelivered):
		return coded(ports.ErrConflict, CodeDeltaNotDelivered, "the delta was never delivered by a claim, so it cannot have been refused")
	case errors.Is(err, delta.ErrAlreadyAcked):
		return coded(ports.ErrConflict, CodeDeltaAcked, "the delta is acknowledged, so the consumer applied it")
	case errors.Is(err, ports.ErrConflict):
		return coded(ports.ErrConflict, CodeFeedBusy, "the feed changed under this request too often; try again")
	}
	return err
}

func (s *FeedService) authorize(p *access.Principal, a access.Action, databaseID string) (string, error) {
	if err := access.AuthorizeDatabase(p, a, databaseID); err != nil {
		return "", err
	}
	return p.OrgID, nil
}

// ParseChanges parses the changes route's query. An absent limit is 0: the
// store takes the registration's page_limit in the same statement, so a
// claim costs no settings read.
func ParseChanges(v url.Values) (delta.ChangesQuery, error) {
	q, err := delta.ParseChangesQuery(v, delta.Settings{})
	if err != nil {
		return delta.ChangesQuery{}, feedError(err)
	}
	if v.Get("limit") == "" {
		q.Limit = 0
	}
	return q, nil
}

// Changes answers GET /api/databases/{id}/changes: a claim (claim=true,
// which needs the write scope) or a read.
func (s *FeedService) Changes(ctx context.Context, p *access.Principal, databaseID string, q delta.ChangesQuery) (ports.FeedWindow, error) {
	act := access.ActReadChanges
	if q.Claim {
		act = access.ActClaimChanges
	}
	org, err := s.authorize(p, act, databaseID)
	if err != nil {
		return ports.FeedWindow{}, err
	}
	var w ports.FeedWindow
	if q.Claim {
		w, err = s.Feed.Claim(ctx, org, databaseID, s.Clock.Now(), q.Lease, q.Limit)
	} else {
		w, err = s.Feed.Read(ctx, org, databaseID, s.Clock.Now(), q)
	}
	return w, feedError(err)
}

// Ack acknowledges every delta with id <= upTo.
func (s *FeedService) Ack(ctx context.Context, p *access.Principal, databaseID string, upTo int64) (ports.AckOutcome, error) {
	org, err := s.authorize(p, access.ActAckChanges, databaseID)
	if err != nil {
		return ports.AckOutcome{}, err
	}
	if upTo < 0 {
		return ports.AckOutcome{}, Invalid("up_to_id", "up_to_id must be a non-negative integer")
	}
	out, err := s.Feed.Ack(ctx, org, databaseID, upTo, s.Clock.Now())
	return out, feedError(err)
}

// ClearAcked deletes the acknowledged deltas still kept.
func (s *FeedService) ClearAcked(ctx context.Context, p *access.Principal, databaseID string) (ports.AckOutcome, error) {
	org, err := s.authorize(p, access.ActClearAcked, databaseID)
	if err != nil {
		return ports.AckOutcome{}, err
	}
	out, err := s.Feed.ClearAcked(ctx, org, databaseID)
	return out, feedError(err)
}

// Summary counts the feed's rows.
func (s *FeedService) Summary(ctx context.Context, p *access.Principal, databaseID string) (ports.FeedSummary, error) {
	org, err := s.authorize(p, access.ActReadFeedSummary, databaseID)
	if err != nil {
		return ports.FeedSummary{}, err
	}
	out, err := s.Feed.Summary(ctx, org, databaseID)
	return out, feedError(err)
}

// Report quarantines the batch of a delta the consumer's database refused.
func (s *FeedService) Report(ctx context.Context, p *access.Principal, databaseID string, deltaID int64, applyError string) (delta.ReportResult, error) {
	org, err := s.authorize(p, access.ActReportQuarantine, databaseID)
	if err != nil {
		return delta.ReportResult{}, err
	}
	if deltaID < 1 {
		return delta.ReportResult{}, Invalid("delta_id", "delta_id must be a positive integer")
	}
	out, err := s.Feed.Report(ctx, org, databaseID, deltaID, clipText(applyError, MaxApplyErrorBytes), s.Clock.Now())
	return out, feedError(err)
}

// clipText cuts s to at most n bytes at a character boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Quarantine is the quarantine listing: data rows grouped by entity (or by
// batch when a row names no entity), schema rows one by one.
type Quarantine struct {
	Entities   []QuarantinedEntity
	Migrations []ports.StoredDelta
	Total      int
}

// QuarantinedEntity is one entity's quarantined rows.
type QuarantinedEntity struct {
	EntityID, EntityType, SchemaID string
	BatchIDs                       []string
	Count                          int
	FirstID                        int64
	Failing                        *ports.StoredDelta // the row the consumer reported
	QuarantinedAt                  *time.Time
}

// ListQuarantine lists the quarantined deltas.
func (s *FeedService) ListQuarantine(ctx context.Context, p *access.Principal, databaseID string) (Quarantine, error) {
	org, err := s.authorize(p, access.ActListQuarantine, databaseID)
	if err != nil {
		return Quarantine{}, err
	}
	rows, err := s.Feed.ListQuarantine(ctx, org, databaseID)
	if err != nil {
		return Quarantine{}, feedError(err)
	}
	out := Quarantine{Total: len(rows)}
	index := map[string]int{}
	for _, r := range rows {
		if r.Kind == delta.Schema {
			out.Migrations = append(out.Migrations, r)
			continue
		}
		key := "e:" + r.EntityID
		if r.EntityID == "" {
			key = "b:" + r.BatchKey()
		}
		i, ok := index[key]
		if !ok {
			i = len(out.Entities)
			index[key] = i
			out.Entities = append(out.Entities, QuarantinedEntity{EntityID: r.EntityID, EntityType: r.EntityType,
				SchemaID: r.SchemaID, FirstID: r.ID, QuarantinedAt: r.QuarantinedAt})
		}
		e := &out.Entities[i]
		e.Count++
		if r.BatchID != "" && (len(e.BatchIDs) == 0 || e.BatchIDs[len(e.BatchIDs)-1] != r.BatchID) {
			e.BatchIDs = append(e.BatchIDs, r.BatchID)
		}
		if r.ApplyError != "" || r.ApplyErrorAt != nil {
			e.Failing = &r
		}
	}
	return out, nil
}

// DeleteQuarantined deletes quarantined batches named by a delta or an
// entity of theirs.
func (s *FeedService) DeleteQuarantined(ctx context.Context, p *access.Principal, databaseID string, sel ports.QuarantineSelection) (ports.AckOutcome, error) {
	org, err := s.authorize(p, access.ActActOnQuarantine, databaseID)
	if err != nil {
		return ports.AckOutcome{}, err
	}
	if len(sel.DeltaIDs) == 0 && len(sel.EntityIDs) == 0 {
		return ports.AckOutcome{}, Invalid("delta_ids", "name the quarantined deltas with delta_ids or entity_ids")
	}
	out, err := s.Feed.DeleteQuarantined(ctx, org, databaseID, sel)
	return out, feedError(err)
}

// Redrive appends copies of quarantined batches at the tail of the feed.
func (s *FeedService) Redrive(ctx context.Context, p *access.Principal, databaseID string, deltaIDs []int64) (ports.RedriveOutcome, error) {
	org, err := s.authorize(p, access.ActActOnQuarantine, databaseID)
	if err != nil {
		return ports.RedriveOutcome{}, err
	}
	if len(deltaIDs) == 0 {
		return ports.RedriveOutcome{}, Invalid("delta_ids", "name the quarantined deltas to redrive with delta_ids")
	}
	out, err := s.Feed.Redrive(ctx, org, databaseID, deltaIDs, s.Clock.Now(), s.IDs.NewID)
	return out, feedError(err)
}
