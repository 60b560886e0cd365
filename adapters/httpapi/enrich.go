package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

func (s *Server) registerEnrichmentRoutes(r *mux.Router) {
	r.HandleFunc("/api/enrichment/options", s.options).Methods(http.MethodGet)
	r.HandleFunc("/api/single/enrich/stream", s.enrichStream).Methods(http.MethodPost)
	r.HandleFunc("/api/single/enrich/sync", s.enrichSync).Methods(http.MethodPost)
}

func (s *Server) registerJobRoutes(r *mux.Router) {
	r.HandleFunc("/api/llm/stream/{job_id}", s.stream).Methods(http.MethodGet)
	r.HandleFunc("/api/llm/cancel/{job_id}", s.cancel).Methods(http.MethodPost)
	r.HandleFunc("/api/llm/continue/{job_id}", s.resume).Methods(http.MethodPost)
}

func (s *Server) options(w http.ResponseWriter, r *http.Request) {
	c, err := s.access.Caller(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	o, err := s.models.Options(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toOptions(o, c))
}

func (s *Server) enrichStream(w http.ResponseWriter, r *http.Request) {
	var in api.EnrichRequest
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.enrich.Start(r.Context(), principal(r), toEnrichRequest(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobStarted(j, "enrichment"))
}

// syncRequest is the blocking variant's body (the document's
// SyncEnrichRequest): the enrich request and the reference's sync-only
// fields.
type syncRequest struct {
	api.EnrichRequest
	TimeoutSeconds         *int `json:"timeout_seconds"`
	IncludePerModelResults bool `json:"include_per_model_results"`
	IncludeProfileLimits   bool `json:"include_profile_limits"`
}

// toEnrichRequest maps the reference's enrich request to the app's (also
// the job's stored request).
func toEnrichRequest(in api.EnrichRequest) app.EnrichRequest {
	return app.EnrichRequest{EntityData: in.EntityData, SchemaID: deref(in.SchemaId), Models: deref(in.Models),
		Model: deref(in.Model), Strategy: string(deref(in.Strategy)), EnableWebSearch: deref(in.EnableWebSearch),
		Languages: deref(in.Languages), EnableResponseSchema: in.EnableResponseSchema,
		EnableStrictStructuredOutput: deref(in.EnableStrictStructuredOutput), DatabaseSync: in.DatabaseSync,
		ClassificationModel: in.ClassificationModel, ArbitrationModel: in.ArbitrationModel,
		AttachmentIDs: deref(in.AttachmentIds), TargetSchema: in.TargetSchema, PauseTimeoutSeconds: in.PauseTimeoutSeconds}
}

// DefaultSyncTimeout is the blocking variant's default timeout_seconds,
// MaxSyncTimeout its largest (the document holds both; a test checks).
const (
	DefaultSyncTimeout = 300 * time.Second
	MaxSyncTimeout     = time.Hour
)

func (s *Server) enrichSync(w http.ResponseWriter, r *http.Request) {
	var in syncRequest
	if !s.decode(w, r, &in) {
		return
	}
	blocking(s, w, r, in.TimeoutSeconds, func(ctx context.Context) (api.SyncResult, error) {
		res, err := s.enrich.Sync(ctx, principal(r), toEnrichRequest(in.EnrichRequest))
		if err != nil {
			return api.SyncResult{}, err
		}
		return toSyncResult(res, in.IncludePerModelResults), nil
	})
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	j, err := s.jobs.Cancel(r.Context(), principal(r), mux.Vars(r)["job_id"], "cancelled by client")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobStatus(j))
}

// jobStarted answers a job started in the background: its id and where to
// follow it.
func jobStarted(j *job.Job, what string) api.JobStarted {
	return api.JobStarted{JobId: j.ID, Message: what + " started; follow GET /api/llm/stream/" + j.ID}
}

func toJobStatus(j *job.Job) api.JobStatus {
	return api.JobStatus{JobId: j.ID, Status: api.JobState(j.State)}
}

// toAnswers maps the optional body of POST /api/llm/continue/{job_id} (the
// reference's ContinueJobRequest); no answers stay nil.
func toAnswers(in api.ContinueJobRequest) job.Answers {
	if in.Answers == nil {
		return nil
	}
	out := make(job.Answers, len(*in.Answers))
	for id, a := range *in.Answers {
		out[id] = job.Answer{OptionIDs: deref(a.OptionIds), Text: deref(a.Text)}
	}
	return out
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	var in api.ContinueJobRequest
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.fail(w, r, http.StatusRequestEntityTooLarge, "body_too_large", "", "request body too large")
			return
		}
		s.Error(w, r, app.Invalid("", "request body could not be read"))
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !s.decode(w, r, &in) {
			return
		}
	}
	j, err := s.jobs.Continue(r.Context(), principal(r), mux.Vars(r)["job_id"], toAnswers(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobStatus(j))
}

// stream writes a job's events as SSE: `id: <seq>` and `data: <json>` per
// event, a comment heartbeat while nothing happens, and the end after a
// terminal event. Last-Event-ID resumes after that sequence number.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["job_id"]
	j, err := s.jobs.Get(r.Context(), principal(r), id)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	after, err := lastEventID(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	// A client that already saw the job's end gets an empty stream that
	// closes at once, not one that waits for events that never come.
	ended, err := s.jobs.Ended(r.Context(), j, after)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil || ended {
		return
	}
	s.sendEvents(w, r, rc, id, after)
}

// sendEvents writes job id's events after seq after until its terminal
// event, the client going away, or a write failing.
func (s *Server) sendEvents(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, id string, after int64) {
	ctx := r.Context()
	var buf []byte
	for {
		wctx, cancel := context.WithTimeout(ctx, s.cfg.SSEHeartbeat)
		evs, err := s.jobs.Events(wctx, id, after)
		cancel()
		if ctx.Err() != nil {
			return // the client went away
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			s.log.ErrorContext(ctx, "read job events", "request_id", requestID(r), "job_id", id, "err", err)
			return
		}
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.SSEWriteTimeout))
		var end bool
		if buf, after, end, err = appendSSE(buf[:0], s.events, evs, after); err != nil {
			s.log.ErrorContext(ctx, "encode event", "job_id", id, "after", after, "err", err)
			return
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil || end {
			return
		}
	}
}

// appendSSE appends events to buf as SSE messages, up to a terminal one
// (end), or a heartbeat comment when there are none; after becomes the last
// seq written.
func appendSSE(buf []byte, codec ports.EventCodec, evs []job.Event, after int64) ([]byte, int64, bool, error) {
	if len(evs) == 0 {
		return append(buf, ": heartbeat\n\n"...), after, false, nil
	}
	var err error
	for _, ev := range evs {
		buf = append(buf, "id: "...)
		buf = strconv.AppendInt(buf, ev.Seq, 10)
		buf = append(buf, "\ndata: "...)
		// JSON escapes control characters, so the data never holds a
		// newline that would start a new SSE field.
		if buf, err = codec.AppendJSON(buf, ev); err != nil {
			return buf, after, false, err
		}
		buf = append(buf, "\n\n"...)
		after = ev.Seq
		if ev.Type.Terminal() {
			return buf, after, true, nil
		}
	}
	return buf, after, false, nil
}

// lastEventID reads where a stream resumes: the Last-Event-ID header (sent
// by a reconnecting EventSource, so it wins), else the last_event_id query
// parameter (for a first connection, which cannot set headers); 0 when
// neither is set. A value that is not a non-negative decimal int64 (garbage,
// negative, past 2^63-1) is refused with 400 naming the one read, rather than
// read as 0, so that a client's bug does not silently replay a whole job.
// A value at or past a finished job's terminal event is valid: the stream has
// nothing left to send.
func lastEventID(r *http.Request) (int64, error) {
	field, v := "Last-Event-ID", strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		field, v = "last_event_id", strings.TrimSpace(r.URL.Query().Get("last_event_id"))
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || v[0] == '+' {
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return 0, app.Invalid(field, "%s must be a non-negative event sequence number, not %q", field, v)
	}
	return n, nil
}
