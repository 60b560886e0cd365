package dbsync

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/entityenrich/enrich/domain/relmap"
)

// A concept merge (issue 30) redirects the entity layer from the loser's
// concept id to the winner's. An entity whose identity holds the loser's
// id (its semantic_id property, or a key that refers to one) is rekeyed:
// when the winner's identity already has an entity in its type, that
// entity absorbs it (its row goes; the winner keeps its own state, since
// both describe one thing and the winner is the one the vocabulary
// keeps); otherwise it is repointed (its row goes and its state, with the
// winner's id, is written under the new identity). An entity that only
// refers to the loser's id in its state keeps its identity and is
// rewritten. The removals are delete deltas and the writes upsert deltas,
// so a consumer converges on one row per identity.

// Redirect is what a merge does to the entity layer: the entity rows to
// delete (each with its delete deltas at its identity's next revision),
// then the states to write (with their upserts), and what each entity
// became.
type Redirect struct {
	Deletes []*Entity
	Writes  []Write
	// Absorbed, Repointed and Referrers count the entities absorbed by the
	// winner's, rekeyed to it, and rewritten in place.
	Absorbed, Repointed, Referrers int
}

// Redirected is e once the concept id loser is winner: its identity (the
// key values equal to loser replaced) and its state (every string value
// equal to loser replaced), and whether the identity changed.
func Redirected(e *Entity, loser, winner string) (Identity, json.RawMessage, bool, error) {
	state, err := relmap.Decode(e.Payload)
	if err != nil {
		return Identity{}, nil, false, fmt.Errorf("entity %s: %w", e.ID, err)
	}
	payload, err := json.Marshal(replaceString(state, loser, winner))
	if err != nil {
		return Identity{}, nil, false, err
	}
	var pairs [][2]*string
	if err := json.Unmarshal([]byte(e.KeyIdentity), &pairs); err != nil {
		return Identity{}, nil, false, fmt.Errorf("entity %s: key identity: %w", e.ID, err)
	}
	id := Identity{EntityType: e.EntityType, Keys: map[string]string{}, SemanticID: e.SemanticID}
	changed := false
	for i := range pairs {
		if v := pairs[i][1]; v != nil && *v == loser {
			pairs[i][1], changed = &winner, true
		}
	}
	for k, v := range e.Keys {
		if v == loser {
			v = winner
		}
		id.Keys[k] = v
	}
	if id.SemanticID == loser {
		id.SemanticID = winner
	}
	b, err := json.Marshal(pairs)
	if err != nil {
		return Identity{}, nil, false, err
	}
	id.KeyIdentity = string(b)
	return id, payload, changed, nil
}

// replaceString is v with every string equal to from replaced by to.
func replaceString(v any, from, to string) any {
	switch x := v.(type) {
	case string:
		if x == from {
			return to
		}
	case map[string]any:
		for k, e := range x {
			x[k] = replaceString(e, from, to)
		}
	case []any:
		for i, e := range x {
			x[i] = replaceString(e, from, to)
		}
	}
	return v
}

// RedirectTargets are the entity ids the rekeyed entities of found take:
// the ones whose existing entities absorb them.
func RedirectTargets(found []*Entity, loser, winner string) ([]string, error) {
	var out []string
	for _, e := range found {
		id, _, changed, err := Redirected(e, loser, winner)
		if err != nil {
			return nil, err
		}
		if changed {
			out = append(out, EntityID(e.SchemaID, id))
		}
	}
	return out, nil
}

// PlanRedirect is the redirect of found (the entities that mention loser,
// by identity or in their state) given existing (the entities already at
// RedirectTargets, by id).
func PlanRedirect(found []*Entity, existing map[string]*Entity, loser, winner, batchID string, at time.Time) (Redirect, error) {
	var r Redirect
	writes := map[string]Write{}
	for _, e := range found {
		id, payload, changed, err := Redirected(e, loser, winner)
		if err != nil {
			return Redirect{}, err
		}
		w := Write{OrgID: e.OrgID, SchemaID: e.SchemaID, RecordID: e.LastRecordID, Identity: id, State: payload,
			BatchID: batchID, At: at}
		target := EntityID(e.SchemaID, id)
		switch x := existing[target]; {
		case !changed:
			r.Referrers++
		case x != nil:
			r.Absorbed++
			r.Deletes = append(r.Deletes, e)
			// The winner keeps its own state, with the loser's id gone
			// from it as from every other.
			wid, wpayload, _, err := Redirected(x, loser, winner)
			if err != nil {
				return Redirect{}, err
			}
			w.RecordID, w.Identity, w.State = x.LastRecordID, wid, wpayload
		default:
			r.Repointed++
			r.Deletes = append(r.Deletes, e)
		}
		writes[target] = w
	}
	ids := make([]string, 0, len(writes))
	for id := range writes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r.Writes = append(r.Writes, writes[id])
	}
	return r, nil
}

// Mentions reports whether e names the concept id text: as its semantic
// id or as a string value of its state.
func Mentions(e *Entity, text string) bool {
	if e.SemanticID == text {
		return true
	}
	state, err := relmap.Decode(e.Payload)
	return err == nil && holdsString(state, text)
}

func holdsString(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case map[string]any:
		for _, e := range x {
			if holdsString(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if holdsString(e, s) {
				return true
			}
		}
	}
	return false
}
