package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/ports"
)

// ClassificationAttempts bounds the tries of one classification call: it is
// cheap and advisory, so one retry (an unusable answer fed back, or a
// transport failure after a short wait) and then the job goes on without it.
const ClassificationAttempts = 2

// ErrClassification is the kind of a blocking run refused by its pre-flight
// classification (422 with the classification).
var ErrClassification = errors.New("the entity does not look like what the schema describes")

// Codes of a blocking run refused by its classification.
const (
	CodeClassificationMismatch = "classification_mismatch"
	CodeClassificationWarning  = "classification_warning"
)

// ClassificationRefused is a blocking run's refusal: the verdict warned
// (mismatch, unknown or ambiguous) and the job was cancelled. Context is the
// reference's ClassificationContext.
type ClassificationRefused struct {
	Status  enrichment.ClassificationStatus
	Context map[string]any
}

func (e *ClassificationRefused) Error() string {
	return fmt.Sprintf("pre-flight classification answered %s: %v", e.Status, e.Context["reasoning"])
}

// Unwrap makes the refusal match ErrClassification.
func (e *ClassificationRefused) Unwrap() error { return ErrClassification }

// Code is classification_mismatch for a mismatch, else
// classification_warning.
func (e *ClassificationRefused) Code() string {
	if e.Status == enrichment.ClassMismatch {
		return CodeClassificationMismatch
	}
	return CodeClassificationWarning
}

// resolveClassifier resolves classification_model: nil when absent or
// empty, auto through AutoPick (the enrichment task), else a catalog model.
func (s *Enricher) resolveClassifier(ctx context.Context, orgID string, v *string) (*model.Info, error) {
	if v == nil || *v == "" {
		return nil, nil
	}
	if *v == model.Auto {
		p, err := s.Models.AutoPick(ctx, orgID, TaskEnrichment, modelsel.Needs{})
		if err != nil {
			return nil, err
		}
		return &p.Model, nil
	}
	m, err := s.Models.knownModelFor(ctx, orgID, "classification_model", *v)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// pauseTimeout is how long a classification pause waits for a continue.
func (s *Enricher) pauseTimeout(req EnrichRequest) time.Duration {
	if req.PauseTimeoutSeconds != nil {
		return time.Duration(*req.PauseTimeoutSeconds) * time.Second
	}
	return cmpDuration(s.PauseTimeout, ports.DefaultPauseTimeout)
}

// checkPauseTimeout validates pause_timeout_seconds.
func checkPauseTimeout(v *int) error {
	if v == nil {
		return nil
	}
	if t := time.Duration(*v) * time.Second; t < time.Second || t > MaxPauseTimeout {
		return Invalid("pause_timeout_seconds", "pause_timeout_seconds must be 1 to %d", int(MaxPauseTimeout/time.Second))
	}
	return nil
}

// classified is a classification's verdict with its call's usage.
type classified struct {
	c        enrichment.Classification
	model    string
	in, out  int
	cost     int64
	took     time.Duration
	failure  string
	verdict  bool
	contextM map[string]any
}

// preflight runs the single enrichment's classification: the verdict for
// the prompts, and a pause when it warns and the job was not continued
// past it. A job continued or taken over after the call does not classify
// again: the verdict is read from its classification_completed event. A
// failed call never blocks: the run goes on without a verdict.
func (s *Enricher) preflight(ctx context.Context, w *ports.Work, pl *plan) (*enrichment.Classification, *ports.Pause) {
	if pl.classifier == nil {
		return nil, nil
	}
	c, ctxMap, done := priorClassification(w.Prior, -1)
	if !done {
		got := s.classifyEntity(ctx, pl, pl.req.EntityData, w.Publish)
		if ctx.Err() != nil || !got.verdict {
			return nil, nil
		}
		c, ctxMap = &got.c, got.contextM
	}
	if c == nil {
		return nil, nil // the call failed: never blocks
	}
	if c.Warns() && !w.Continued {
		t := s.pauseTimeout(pl.req)
		return c, &ports.Pause{Timeout: t, Event: job.ClassificationMismatchPause{Classification: ctxMap, TimeoutSeconds: int(t / time.Second)}}
	}
	return c, nil
}

// priorClassification reads the verdict of the last classification_completed
// event of prior (of the batch entity index, or without one for index < 0):
// done when there is one; c nil when that call failed.
func priorClassification(prior []job.Event, index int) (c *enrichment.Classification, ctxMap map[string]any, done bool) {
	for i := len(prior) - 1; i >= 0; i-- {
		ev := prior[i]
		if ev.Type != job.EventClassificationCompleted {
			continue
		}
		if idx, ok := job.EntityIndex(ev); index >= 0 && (!ok || idx != index) {
			continue
		}
		p, _ := job.PayloadOf[job.ClassificationCompleted](ev)
		m := p.Classification
		if m == nil {
			return nil, nil, true
		}
		var got enrichment.Classification
		if remarshal(m, &got) != nil {
			return nil, nil, true
		}
		return &got, m, true
	}
	return nil, nil, false
}

// classifyEntity makes the classification call of one entity and narrates
// it (classification_started, classification_completed) through pub.
func (s *Enricher) classifyEntity(ctx context.Context, pl *plan, entity json.RawMessage, pub func(job.Payload)) classified {
	m := *pl.classifier
	pub(job.ClassificationStarted{Model: m.Key.String()})
	got := s.classify(ctx, pl, m, entity)
	if ctx.Err() != nil {
		return got
	}
	done := job.ClassificationCompleted{Model: got.model, Success: got.verdict, ErrorMessage: got.failure}
	if got.verdict {
		done.Classification = got.contextM
	}
	pub(done)
	return got
}

// classify asks the classifier whether entity is the kind of thing the
// plan's schema describes.
func (s *Enricher) classify(ctx context.Context, pl *plan, m model.Info, entity json.RawMessage) classified {
	t0 := time.Now()
	got := classified{model: m.Key.String()}
	in := enrichment.ClassificationInput{SchemaName: pl.schema.Name, Description: pl.schema.Description,
		Entity: enrichment.CutEntity(entity)}
	in.SchemaTitle, _ = pl.doc["title"].(string)
	msgs := enrichment.ClassificationPrompt(in)
	schema := enrichment.ClassificationSchema()
	for attempt := 1; attempt <= ClassificationAttempts; attempt++ {
		resp, err := s.Calls.generate(ctx, pl, m, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: schema,
			SchemaName: "classification", ResponseSchema: true, Task: ports.TaskClassification, OrgID: pl.usage.orgID})
		got.in, got.out = got.in+resp.InputTokens, got.out+resp.OutputTokens
		got.cost += m.Price.Cost(resp.InputTokens, resp.OutputTokens)
		if ctx.Err() != nil {
			return got
		}
		if err != nil {
			code := classify(err)
			got.failure = fmt.Sprintf("classification call failed: %s", code.Message())
			s.Log.Warn("classification call failed", "model", got.model, "attempt", attempt, "code", code, "err", err)
			if permanent(err) {
				break
			}
			select {
			case <-time.After(100 * time.Millisecond * time.Duration(attempt)):
			case <-ctx.Done():
				return got
			}
			continue
		}
		c, perr := enrichment.ParseClassification(resp.Text)
		if perr == nil {
			got.c, got.verdict, got.failure = c, true, ""
			break
		}
		got.failure = fmt.Sprintf("classification answer unusable: %v", perr)
		msgs = enrichment.Retry(msgs, resp.Text, perr)
	}
	got.took = time.Since(t0)
	if got.verdict {
		got.contextM = classificationContext(got)
	}
	return got
}

// classificationContext is the reference's ClassificationContext.
func classificationContext(g classified) map[string]any {
	alts := g.c.AlternativeInterpretations
	if alts == nil {
		alts = []string{}
	}
	return map[string]any{"status": string(g.c.Status), "entity_description": g.c.EntityDescription,
		"expected_type": g.c.ExpectedType, "confidence": g.c.Confidence, "reasoning": g.c.Reasoning,
		"alternative_interpretations": alts, "classification_model": g.model, "input_tokens": g.in,
		"output_tokens": g.out, "cost": g.cost, "cost_usd": model.USD(g.cost), "processing_time_ms": g.took.Milliseconds()}
}
