package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// MaxInjectionItems bounds a sync-to-database call.
const MaxInjectionItems = 100

// InjectionItem is one item of POST /api/records/sync-to-database (WIRE.md
// §5.6): a stored record (RecordID), an output to validate and inject
// (Output with SchemaID), or both (the record's output replaced, the
// record its provenance).
type InjectionItem struct {
	RecordID string
	SchemaID string
	Output   json.RawMessage // nil: the record's stored output
}

// Injection statuses: the entity layer's three, and skipped (nothing was
// attempted).
const (
	InjectionSaved    = "saved"
	InjectionPartial  = "partial"
	InjectionRejected = "rejected"
	InjectionSkipped  = "skipped"
)

// InjectionResult is one item's outcome.
type InjectionResult struct {
	Status string
	// RecordID is the record the outcome belongs to: the minted one when
	// the item carried an output; SourceRecordID the record it named, when
	// it differs.
	RecordID, SourceRecordID string
	CreatedRecord            bool
	// Database is the entity layer's outcome (nil when skipped).
	Database         *dbsync.Outcome
	Reason           string
	ValidationErrors []string
}

// InjectionResponse is the call's answer: every item's result in order,
// and the counts per status.
type InjectionResponse struct {
	Results                           []InjectionResult
	Saved, Partial, Rejected, Skipped int
}

// injection is one item as planned: its result so far and, when it is
// written, the entity write and the record to mint.
type injection struct {
	res   InjectionResult
	write *ports.EntityWrite
	mint  *enrichment.Record
	// rec is the stored record the item named (nil for an output alone).
	rec *enrichment.Record
}

// SyncRecords feeds stored or supplied outputs through the entity layer,
// in order, in one unit of work: the minted records, the entities and
// their deltas commit together. Each item names a stored record, or an
// output with the schema that validates it, or both. An item whose schema
// is not linked to a database, not published, or fed by no registration
// is skipped; an output that fails the schema's published contract is
// rejected with its validation errors; otherwise the entity layer decides
// (saved, partial or rejected, as for an enrichment). A record or schema
// that is unknown or another organization's is 404 for the whole call,
// naming the item, before anything is written.
func (s *EntityService) SyncRecords(ctx context.Context, p *access.Principal, items []InjectionItem) (*InjectionResponse, error) {
	if err := access.Authorize(p, access.ActSyncRecordsToDB); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	if len(items) == 0 || len(items) > MaxInjectionItems {
		return nil, Invalid("items", "items must hold 1 to %d items, not %d", MaxInjectionItems, len(items))
	}
	for i, it := range items {
		if err := checkItem(i, it); err != nil {
			return nil, err
		}
	}
	dbs := map[string][]*dbsync.Database{}
	plans := make([]injection, len(items))
	for i, it := range items {
		pl, err := s.planItem(ctx, p.OrgID, i, it, dbs)
		if err != nil {
			return nil, err
		}
		plans[i] = pl
	}
	if err := s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		var ws []ports.EntityWrite
		for _, pl := range plans {
			if pl.mint != nil {
				if err := r.Records.CreateRecord(ctx, pl.mint); err != nil {
					return err
				}
			}
			if pl.write != nil {
				ws = append(ws, *pl.write)
			}
		}
		if _, err := writeEntities(ctx, r, ws); err != nil {
			return err
		}
		return queueInjectionEvents(ctx, r, s.Events.injection(plans, s.IDs.NewID()))
	}); err != nil {
		return nil, err
	}
	out := &InjectionResponse{Results: make([]InjectionResult, len(plans))}
	for i, pl := range plans {
		out.Results[i] = pl.res
		switch pl.res.Status {
		case InjectionSaved:
			out.Saved++
		case InjectionPartial:
			out.Partial++
		case InjectionRejected:
			out.Rejected++
		default:
			out.Skipped++
		}
	}
	return out, nil
}

// checkItem checks an item's shape: a record, or an output with its
// schema, or both; the output an object.
func checkItem(i int, it InjectionItem) error {
	at := func(f string) string { return fmt.Sprintf("items.%d.%s", i, f) }
	for f, v := range map[string]string{"record_id": it.RecordID, "saved_schema_id": it.SchemaID} {
		if err := checkText(at(f), v); err != nil {
			return err
		}
		if len(v) > 200 {
			return Invalid(at(f), "%s is too long", f)
		}
	}
	hasOut := hasOutput(it.Output)
	switch {
	case it.RecordID == "" && !hasOut:
		return Invalid(at("record_id"), "an item names a record_id, or carries a structured_output with its saved_schema_id")
	case hasOut && it.RecordID == "" && it.SchemaID == "":
		return Invalid(at("saved_schema_id"), "a structured_output without a record_id needs the saved_schema_id that validates it")
	case hasOut && bytes.TrimSpace(it.Output)[0] != '{':
		return Invalid(at("structured_output"), "structured_output must be an object")
	}
	return nil
}

// planItem reads what an item names and decides its write. dbs caches the
// registrations of the schemas read so far.
func (s *EntityService) planItem(ctx context.Context, orgID string, i int, it InjectionItem, dbs map[string][]*dbsync.Database) (injection, error) {
	var pl injection
	var rec *enrichment.Record
	if !hasOutput(it.Output) {
		it.Output = nil
	}
	if it.RecordID != "" {
		got, err := s.Records.GetRecord(ctx, orgID, it.RecordID)
		if err != nil {
			return pl, notFoundAt(err, fmt.Sprintf("items.%d.record_id", i), "record %s not found", it.RecordID)
		}
		rec = got
		pl.rec, pl.res.RecordID = rec, rec.ID
	}
	output := it.Output
	if output == nil && rec != nil {
		output = rec.StructuredOutput
	}
	schemaID := it.SchemaID
	if schemaID == "" && rec != nil {
		schemaID = rec.SchemaID
	}
	sc, skip, err := s.itemSchema(ctx, orgID, i, it.SchemaID != "", schemaID)
	switch {
	case err != nil:
		return pl, err
	case skip != "":
		return skipped(pl, skip), nil
	case !hasOutput(output):
		return skipped(pl, "the record has no structured output to inject"), nil
	}
	if errs := s.validateOutput(ctx, sc.Contract(), output); len(errs) > 0 {
		out := rejected("the output does not satisfy the schema's published contract")
		pl.res.Status, pl.res.Database, pl.res.Reason, pl.res.ValidationErrors = InjectionRejected, &out, out.Reason, errs
		return pl, nil
	}
	if _, ok := dbs[sc.ID]; !ok {
		got, err := s.Entities.SchemaDatabases(ctx, orgID, sc.ID)
		if err != nil {
			return pl, err
		}
		dbs[sc.ID] = got
	}
	return s.decideItem(pl, sc, rec, it, output, dbs[sc.ID]), nil
}

// itemSchema is the schema an item injects into: skip says why the item
// is skipped; a schema the item named that is unknown is 404.
func (s *EntityService) itemSchema(ctx context.Context, orgID string, i int, named bool, id string) (*schema.Schema, string, error) {
	if id == "" {
		return nil, "the record has no schema", nil
	}
	sc, err := liveSchema(ctx, s.Schemas, orgID, id)
	switch {
	case err != nil && named:
		return nil, "", notFoundAt(err, fmt.Sprintf("items.%d.saved_schema_id", i), "schema %s not found", id)
	case err != nil && isNotFound(err):
		return nil, "the record's schema no longer exists", nil
	case err != nil:
		return nil, "", err
	case !sc.Linked:
		return nil, "schema " + id + " is not linked to a database", nil
	case sc.PublishedContent == nil:
		return nil, "schema " + id + " has no published contract", nil
	}
	return sc, "", nil
}

// decideItem is the entity layer's decision on an item's output, with the
// record it belongs to (minted when the item carried an output).
func (s *EntityService) decideItem(pl injection, sc *schema.Schema, rec *enrichment.Record, it InjectionItem,
	output json.RawMessage, dbs []*dbsync.Database) injection {
	now := s.Clock.Now()
	recordID := pl.res.RecordID
	if it.Output != nil {
		mint := &enrichment.Record{ID: s.IDs.NewID(), OrgID: sc.OrgID, Type: enrichment.RecordEnrichment, SchemaID: sc.ID,
			StructuredOutput: output, CreatedAt: now}
		if rec != nil {
			mint.EntityData, mint.Model, mint.Strategy, mint.Sandbox = rec.EntityData, rec.Model, rec.Strategy, rec.Sandbox
			pl.res.SourceRecordID = rec.ID
		}
		recordID = mint.ID
		pl.mint = mint
	}
	t := dbsync.Target{OrgID: sc.OrgID, SchemaID: sc.ID, Contract: sc.Contract(), KeyLanguage: sc.KeyLanguage}
	// Each injection is a batch of its own: a stored record injected
	// twice queues two batches.
	out, w, feeds, err := dbsync.Decide(dbs, t, recordID, output, s.IDs.NewID())
	switch {
	case !feeds:
		pl.mint = nil
		return skipped(pl, "no database takes the schema's enrichments (enrichment is disabled on every link)")
	case err != nil:
		out = rejected("the entity could not be admitted: " + err.Error())
	}
	pl.res.Database, pl.res.Status, pl.res.Reason = &out, string(out.Status), out.Reason
	if w == nil || err != nil {
		pl.mint = nil
		pl.res.Status = InjectionRejected
		return pl
	}
	w.At = now
	pl.write = &ports.EntityWrite{Write: *w, Outcome: out}
	pl.res.RecordID, pl.res.CreatedRecord = recordID, pl.mint != nil
	return pl
}

func skipped(pl injection, reason string) injection {
	pl.res.Status, pl.res.Reason = InjectionSkipped, reason
	return pl
}

// validateOutput checks an output against a contract (localized to the
// languages of its multilingual values) and returns the errors, one per
// line of the validator's message.
func (s *EntityService) validateOutput(ctx context.Context, contract, output json.RawMessage) []string {
	var doc, obj map[string]any
	if json.Unmarshal(contract, &doc) != nil || json.Unmarshal(output, &obj) != nil {
		return []string{"the output or the contract is not a JSON object"}
	}
	if langs := languagesOf(doc, []fuseSource{{result: obj}}); len(langs) > 0 {
		doc = enrichment.Localize(doc, langs)
	}
	raw, _ := json.Marshal(doc)
	v, err := s.Compiler.Compile(ctx, raw)
	if err != nil {
		return []string{"the published contract does not compile: " + err.Error()}
	}
	var val any
	_ = json.Unmarshal(output, &val)
	if err := v.Validate(val); err != nil {
		var out []string
		for _, l := range strings.Split(err.Error(), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	return nil
}

// notFoundAt is err as a 404 naming field when it is a not-found, else as
// it is.
func notFoundAt(err error, field, format string, args ...any) error {
	if !isNotFound(err) {
		return err
	}
	e := coded(ports.ErrNotFound, "not_found", format, args...).(*Error)
	return e.at(field)
}

func isNotFound(err error) bool { return errors.Is(err, ports.ErrNotFound) }

// hasOutput reports whether an output is there (not absent, not null).
func hasOutput(o json.RawMessage) bool {
	t := bytes.TrimSpace(o)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}
