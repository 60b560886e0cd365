package app

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// Start validates the request and creates the job with its queue entry. It
// returns the job for the SSE stream.
func (s *EnrichmentService) Start(ctx context.Context, p *access.Principal, req EnrichRequest) (*job.Job, error) {
	if err := access.Authorize(p, access.ActEnrich); err != nil {
		return nil, err
	}
	pl, err := s.prepare(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(req)
	now := s.Clock.Now()
	j := &job.Job{ID: s.IDs.NewID(), OrgID: p.OrgID, Type: job.TypeEnrichment, State: job.Pending,
		Request: body, CreatedAt: now, UpdatedAt: now, HeartbeatAt: now}
	if err := s.Engine.Create(ctx, j, pl); err != nil {
		if errors.Is(err, ports.ErrCapacity) {
			return nil, coded(ports.ErrCapacity, "capacity", "the server has no capacity for the job, try again shortly")
		}
		return nil, err
	}
	s.Log.Info("enrichment queued", "job_id", j.ID, "org_id", p.OrgID, "schema_id", pl.schema.ID,
		"strategy", pl.choice.Strategy, "calls", len(pl.calls), "models", len(pl.models), "state", j.State)
	return j, nil
}

// SyncResult is what the blocking variant returns.
type SyncResult struct {
	Job       *job.Job
	Result    map[string]any
	RecordID  string
	RecordIDs []string
	Cost      int64
}

// completedPayload is the part of a completed event that Sync returns.
type completedPayload struct {
	Result    map[string]any `json:"result"`
	RecordID  string         `json:"record_id"`
	RecordIDs []string       `json:"record_ids"`
	Cost      int64          `json:"cost"`
}

// Sync runs an enrichment and waits for its end on the event stream. When
// ctx ends first (the client went away, or the timeout passed) the job is
// cancelled and ctx's error is returned.
func (s *EnrichmentService) Sync(ctx context.Context, p *access.Principal, req EnrichRequest) (*SyncResult, error) {
	j, err := s.Start(ctx, p, req)
	if err != nil {
		return nil, err
	}
	var after int64
	for {
		evs, err := s.Stream.Wait(ctx, j.ID, after)
		if err != nil {
			reason := "client went away"
			if errors.Is(err, context.DeadlineExceeded) {
				reason = "timeout_seconds elapsed"
			}
			if _, cerr := s.JobSvc.Cancel(context.WithoutCancel(ctx), p, j.ID, reason); cerr != nil {
				s.Log.Debug("cancel after sync ended", "job_id", j.ID, "err", cerr)
			}
			return nil, err
		}
		for _, ev := range evs {
			after = ev.Seq
			if !ev.Type.Terminal() {
				continue
			}
			// The terminal event says how the job ended; no need to read it.
			final := *j
			var end struct {
				Status  job.State     `json:"status"`
				Code    job.ErrorCode `json:"error_code"`
				Message string        `json:"error_message"`
				Reason  string        `json:"reason"`
			}
			if err := remarshal(ev.Data, &end); err != nil {
				return nil, err
			}
			final.State, final.ErrorCode, final.Error, final.UpdatedAt = end.Status, end.Code, end.Message, ev.CreatedAt
			if ev.Type == job.EventCancelled {
				final.State, final.Error = job.Cancelled, end.Reason
			}
			out := &SyncResult{Job: &final}
			if ev.Type == job.EventCompleted {
				var c completedPayload
				if err := remarshal(ev.Data, &c); err != nil {
					return nil, err
				}
				out.Result, out.RecordID, out.RecordIDs, out.Cost = c.Result, c.RecordID, c.RecordIDs, c.Cost
			}
			return out, nil
		}
	}
}

// remarshal reads an event payload (as published, or as decoded from the
// log) into a typed struct.
func remarshal(data map[string]any, v any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
