package dbsync

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/entityenrich/enrich/domain/jsondoc"
	"github.com/entityenrich/enrich/domain/relmap"
)

// Status is the three-state view of an entity-layer write (WIRE.md §1.4).
type Status string

const (
	// StatusSaved: everything the run produced was written.
	StatusSaved Status = "saved"
	// StatusPartial: the entity landed without some of what the run
	// produced (skip_children dropped array items).
	StatusPartial Status = "partial"
	// StatusRejected: nothing was written.
	StatusRejected Status = "rejected"
)

// Outcome is one enrichment's entity-layer outcome, the DatabaseSyncOutcome
// of the sync answer, the database_* events and the injection results.
type Outcome struct {
	Saved  bool
	Status Status
	// BatchID is the batch every delta of the write shares, across all the
	// schema's databases ("" when nothing was queued).
	BatchID     string
	DeltaCount  int
	EntityCount int
	// EntityKeys are the root row's key values by key-column name.
	EntityKeys map[string]string
	// MissingFields are the non-nullable property paths the run left
	// unfilled (dotted, array items as name[i]); SkippedItems the array
	// items skip_children dropped.
	MissingFields []string
	SkippedItems  []string
	Reason        string
}

// Admission is the gate's decision on one entity state: the outcome
// (without its batch and counts, which the write sets) and, when admitted,
// the state to write (array items with gaps dropped under skip_children).
type Admission struct {
	Outcome Outcome
	State   json.RawMessage // nil when rejected
}

// Admitted reports whether the entity is written.
func (a Admission) Admitted() bool { return a.State != nil }

// Strictest is the gate of a schema linked to several registrations: the
// strictest on_gaps of the links that feed a database (enrichment
// enabled), since the entity layer holds one state per identity for all
// of them. "" when no link feeds one.
func Strictest(dbs []*Database, schemaID string) OnGaps {
	rank := map[OnGaps]int{AcceptPartial: 1, SkipChildren: 2, RejectEntity: 3}
	var out OnGaps
	for _, d := range dbs {
		l, ok := d.Link(schemaID)
		if !ok || !l.EnrichmentEnabled {
			continue
		}
		g := d.OnGaps
		if rank[g] == 0 {
			g = SkipChildren
		}
		if rank[g] > rank[out] {
			out = g
		}
	}
	return out
}

// Admit applies the gap admission ladder to an entity state under the
// contract:
//
//   - no gap: saved;
//   - reject_entity: any gap rejects the entity (nothing written);
//   - skip_children: an array item with a gap of its own (outside a
//     deeper array) is dropped (status partial, skipped_items); a gap of
//     the entity itself still rejects it;
//   - accept_partial: written as it is, gaps as NULL (status saved, the
//     gaps in missing_fields).
//
// A gap is a property that is not nullable (neither nullable: true nor
// typed null) whose value is absent or null while its object is present.
// An entity without any identifying value is rejected whatever the
// ladder. The outcome's entity_keys are set when the entity is admitted.
func Admit(policy OnGaps, contract json.RawMessage, m relmap.Map, state json.RawMessage) (Admission, error) {
	obj, err := relmap.Decode(state)
	if err != nil {
		return Admission{}, err
	}
	var doc map[string]any
	if err := json.Unmarshal(contract, &doc); err != nil || doc == nil {
		return Admission{}, fmt.Errorf("%w: not a JSON object", relmap.ErrContract)
	}
	w := gapWalk{doc: doc, drop: policy == SkipChildren}
	own := w.object(rootOf(doc), obj, "")
	out := Outcome{MissingFields: w.missing, SkippedItems: w.skipped}
	sort.Strings(out.MissingFields)
	switch {
	case len(own) > 0 && policy != AcceptPartial, len(w.missing) > 0 && policy == RejectEntity:
		return reject(out, "non-nullable properties unfilled: "+strings.Join(out.MissingFields, ", ")), nil
	}
	id, err := IdentityOf(m, obj)
	if err != nil {
		return reject(out, "the entity has no identifying value: "+err.Error()), nil
	}
	out.Saved, out.Status, out.EntityKeys = true, StatusSaved, id.Keys
	if len(w.skipped) > 0 {
		out.Status = StatusPartial
		out.Reason = fmt.Sprintf("%d array items with unfilled non-nullable properties were dropped", len(w.skipped))
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return Admission{}, err
	}
	return Admission{Outcome: out, State: b}, nil
}

func reject(out Outcome, reason string) Admission {
	out.Saved, out.Status, out.Reason, out.SkippedItems = false, StatusRejected, reason, nil
	return Admission{Outcome: out}
}

// rootOf is the entity's object schema in a contract: its top level, or
// the internal form's root.
func rootOf(doc map[string]any) map[string]any {
	root := doc
	if r, ok := doc["root"].(map[string]any); ok {
		if _, has := doc["properties"]; !has {
			root = r
		}
	}
	return jsondoc.Deref(doc, root)
}

type gapWalk struct {
	doc     map[string]any
	drop    bool // skip_children: drop array items with gaps of their own
	missing []string
	skipped []string
}

// object returns the gaps of obj itself (outside its arrays), recording
// every gap in missing and dropping gapped array items when w.drop.
func (w *gapWalk) object(node, obj map[string]any, path string) []string {
	props, _ := jsondoc.Deref(w.doc, node)["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	var own []string
	for _, name := range names {
		raw, _ := props[name].(map[string]any)
		if raw == nil {
			continue
		}
		p := jsondoc.Deref(w.doc, raw)
		at := join(path, name)
		v := obj[name]
		if v == nil {
			if !nullableProp(raw) && !nullableProp(p) {
				own = append(own, at)
				w.missing = append(w.missing, at)
			}
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			if _, ok := p["properties"].(map[string]any); ok {
				own = append(own, w.object(p, x, at)...)
			}
		case []any:
			obj[name] = w.items(jsondoc.Deref(w.doc, mapOf(p["items"])), x, at)
		}
	}
	return own
}

// items walks the object items of an array and returns the items kept.
func (w *gapWalk) items(node map[string]any, items []any, path string) []any {
	if _, ok := node["properties"].(map[string]any); !ok {
		return items
	}
	kept := items[:0:0]
	for i, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			kept = append(kept, it)
			continue
		}
		at := fmt.Sprintf("%s[%d]", path, i)
		if own := w.object(node, o, at); len(own) > 0 && w.drop {
			w.skipped = append(w.skipped, at)
			continue
		}
		kept = append(kept, it)
	}
	return kept
}

func nullableProp(p map[string]any) bool {
	return p["nullable"] == true || jsondoc.HasType(p, "null")
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
