package dbsync

import (
	"encoding/json"
)

// Target is the schema side of a decision: the linked schema's published
// contract and the language its multilingual keys are keyed in.
type Target struct {
	OrgID, SchemaID string
	Contract        json.RawMessage
	KeyLanguage     string
}

// Decide is the entity layer's decision on one record's output (state) for
// a schema linked to dbs: the gate (Strictest on_gaps, Admit), then, when
// admitted, the Write the store applies in the record's commit. feeds is
// false when no registration takes the schema's enrichments (no link, or
// every link's enrichment disabled): nothing is decided and there is no
// outcome. The outcome counts the entity and the deltas the write queues
// (one per registration that Feeds names) and carries batchID when it
// queues any.
func Decide(dbs []*Database, t Target, recordID string, state json.RawMessage, batchID string) (out Outcome, w *Write, feeds bool, err error) {
	policy := Strictest(dbs, t.SchemaID)
	if policy == "" {
		return Outcome{}, nil, false, nil
	}
	m, err := EntityMap(t.Contract, keyLanguage(dbs, t))
	if err != nil {
		return Outcome{}, nil, true, err
	}
	adm, err := Admit(policy, t.Contract, m, state)
	if err != nil {
		return Outcome{}, nil, true, err
	}
	if !adm.Admitted() {
		return adm.Outcome, nil, true, nil
	}
	obj, err := decodeState(adm.State)
	if err != nil {
		return Outcome{}, nil, true, err
	}
	id, err := IdentityOf(m, obj)
	if err != nil {
		return Outcome{}, nil, true, err
	}
	out = adm.Outcome
	out.EntityCount = 1
	if n := len(Feeds(dbs, t.SchemaID)); n > 0 {
		out.DeltaCount, out.BatchID = n, batchID
	}
	return out, &Write{OrgID: t.OrgID, SchemaID: t.SchemaID, RecordID: recordID, Identity: id, State: adm.State,
		BatchID: out.BatchID}, true, nil
}

// keyLanguage is the schema's locked key language, else the first
// registration's, else DefaultKeyLanguage.
func keyLanguage(dbs []*Database, t Target) string {
	if t.KeyLanguage != "" {
		return t.KeyLanguage
	}
	for _, d := range dbs {
		if d.KeyLanguage != "" {
			return d.KeyLanguage
		}
	}
	return DefaultKeyLanguage
}
