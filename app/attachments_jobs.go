package app

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/ports"
)

// jobAttachments are the attachments of one job: their metadata, resolved
// when the job is submitted (before any spend), and their bytes, read once
// when the job starts. From then on the job holds what it read, so
// deleting an attachment does not break a running job.
type jobAttachments struct {
	metas []attachment.Attachment

	once   sync.Once
	loaded []attachment.Loaded
	err    error
}

// resolveAttachments resolves ids for orgID (nil when there are none).
func resolveAttachments(ctx context.Context, l *AttachmentLoader, orgID string, ids []string) (*jobAttachments, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	metas, err := l.Resolve(ctx, orgID, ids)
	if err != nil {
		return nil, err
	}
	return &jobAttachments{metas: metas}, nil
}

// count is the number of attachments (0 for none).
func (ja *jobAttachments) count() int {
	if ja == nil {
		return 0
	}
	return len(ja.metas)
}

// needs adds to n what a model must declare to read the attachments as
// bytes: auto picks among the models that can, so that it never settles
// for a text fallback where a model could read the document itself.
func (ja *jobAttachments) needs(n modelsel.Needs) modelsel.Needs {
	if ja == nil {
		return n
	}
	for _, c := range attachment.Needs(ja.metas) {
		switch c {
		case attachment.CapPDF:
			n.PDFInput = true
		case attachment.CapVision:
			n.Vision = true
		case attachment.CapAudio:
			n.Audio = true
		}
	}
	return n
}

// CodeModelLacksCapability refuses a named model that cannot do what the
// request needs (read an attachment, search the web).
const CodeModelLacksCapability = "model_lacks_capability"

// checkReadable refuses, with 400 model_lacks_capability naming field, a
// model named by the caller that cannot read an attachment: a binary one
// it has not the capability for and that has no extracted text to fall
// back on.
func (ja *jobAttachments) checkReadable(field string, m model.Info) error {
	if ja == nil {
		return nil
	}
	if ok, missing := attachment.Readable(ja.metas, attachment.ModelHas(m)); !ok {
		return (&Error{Kind: ports.ErrInvalid, Code: CodeModelLacksCapability,
			Detail: fmt.Sprintf("%s: model %q cannot read the attachments: it lacks %s, and an attachment has no text to fall back on",
				field, m.Key.String(), missing)}).at(field)
	}
	return nil
}

// load reads the attachments' bytes, once per job run; a failure fails the
// job before any call.
func (ja *jobAttachments) load(ctx context.Context, l *AttachmentLoader) *ports.Failure {
	if ja == nil {
		return nil
	}
	ja.once.Do(func() { ja.loaded, ja.err = l.Load(ctx, ja.metas) })
	if ja.err == nil {
		return nil
	}
	if e, ok := AsError(ja.err); ok {
		return &ports.Failure{Code: job.ErrorCode(e.Code), Msg: e.Detail}
	}
	if errors.Is(ja.err, ports.ErrUnavailable) {
		return &ports.Failure{Code: job.CodeInternal, Msg: "the attachments' storage is unavailable"}
	}
	return &ports.Failure{Code: job.CodeInternal, Msg: "the attachments could not be read"}
}

// prompt gives msgs the attachments as model m reads them: its files
// natively when it has their capability, text blocks otherwise.
func (ja *jobAttachments) prompt(msgs []enrichment.Message, m model.Info) []enrichment.Message {
	if ja == nil || len(ja.loaded) == 0 {
		return msgs
	}
	text, files := attachment.ForModel(ja.loaded, attachment.ModelHas(m))
	return enrichment.WithAttachments(msgs, text, files)
}

// refs are the attachments as the job's records list them.
func (ja *jobAttachments) refs() []enrichment.AttachmentRef {
	if ja == nil {
		return nil
	}
	return attachment.Refs(ja.metas)
}

// cohere decides, once per job, how two or more attachments relate, and
// publishes attachment_coherence. An incoherent set fails the job with
// incoherent_attachments. The verdict is advisory otherwise: a failed or
// unusable call is logged and the job goes on without it. A worker that
// takes the job over reuses the verdict its prior events show.
func (ja *jobAttachments) cohere(ctx context.Context, c *Calls, pl *plan, m model.Info, subject string, prior []job.Event,
	pub func(job.Payload)) (spent job.AttachmentCoherence, failure *ports.Failure) {
	if ja.count() < 2 {
		return job.AttachmentCoherence{}, nil
	}
	ev, seen := priorCoherence(prior)
	if !seen {
		msgs := ja.prompt(attachment.CoherencePrompt(ja.metas, subject), m)
		resp, err := c.generate(ctx, pl, m, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: attachment.CoherenceSchema(),
			SchemaName: "attachment_coherence", ResponseSchema: true, OrgID: pl.usage.orgID, Task: ports.TaskAttachmentCoherence})
		spent = job.AttachmentCoherence{InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens,
			Cost: m.Price.Cost(resp.InputTokens, resp.OutputTokens)}
		if err != nil {
			c.Log.Warn("attachment coherence call failed: going on without a verdict", "model", m.Key.String(), "err", err)
			return spent, nil
		}
		v, perr := attachment.ParseVerdict(resp.Text, len(ja.metas))
		if perr != nil {
			c.Log.Warn("attachment coherence answer unusable: going on without a verdict", "model", m.Key.String(), "err", perr)
			return spent, nil
		}
		ev = ja.event(v)
		ev.InputTokens, ev.OutputTokens, ev.Cost = spent.InputTokens, spent.OutputTokens, spent.Cost
		pub(ev)
	}
	if ev.Mode == string(attachment.Incoherent) {
		msg := job.CodeIncoherentAttachments.Message()
		if ev.Reason != "" {
			msg += ": " + ev.Reason
		}
		return ev, &ports.Failure{Code: job.CodeIncoherentAttachments, Msg: msg}
	}
	return ev, nil
}

// event is v as the attachment_coherence event names the attachments.
func (ja *jobAttachments) event(v attachment.Verdict) job.AttachmentCoherence {
	file := func(i int) job.AttachmentFile { return job.AttachmentFile{Index: i, Filename: ja.metas[i].Filename} }
	ev := job.AttachmentCoherence{Mode: string(v.Mode), ObjectType: v.ObjectType, Reason: v.Reason}
	if v.Reference != nil {
		f := file(*v.Reference)
		ev.Reference = &f
	}
	for _, i := range v.Excluded {
		ev.Excluded = append(ev.Excluded, file(i))
	}
	return ev
}

// priorCoherence is the verdict an earlier worker of the job published.
func priorCoherence(prior []job.Event) (job.AttachmentCoherence, bool) {
	for _, e := range prior {
		if e.Type != job.EventAttachmentCoherence {
			continue
		}
		if p, ok := job.Inner(e.Payload).(job.AttachmentCoherence); ok {
			return p, true
		}
	}
	return job.AttachmentCoherence{}, false
}
