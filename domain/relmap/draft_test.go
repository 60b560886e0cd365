package relmap

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"
)

// TestDraft: a draft stored as JSON and rendered at a revision is the
// write UpsertWithID renders at it, whatever the revision, the strategy
// or the child tables.
func TestDraft(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		id    string
		state string
	}{
		{"surrogate with children", Options{}, "", acme},
		{"surrogate with the entity id", Options{}, "0b9c8a4e-4a8f-8f1e-9d2a-3c4b5d6e7f80", acme},
		{"natural", Options{PKStrategy: Natural}, "", acme},
		{"no child rows", Options{}, "", `{"name": "Acme", "country": "IE"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			m := company(t, tc.opts)
			d, err := UpsertDraft(m, tc.id, json.RawMessage(tc.state))
			is.NoErr(err)
			b, err := json.Marshal(d)
			is.NoErr(err)
			stored, err := ParseDraft(b)
			is.NoErr(err)
			for _, rev := range []int64{1, 7, 1234567890123} {
				want, err := UpsertWithID(m, tc.id, json.RawMessage(tc.state), rev)
				is.NoErr(err)
				sql, err := stored.SQL(rev)
				is.NoErr(err)
				is.Equal(sql, want.SQL())
				got, err := d.Render(rev)
				is.NoErr(err)
				gb, _ := json.Marshal(got.Payload)
				wb, _ := json.Marshal(want.Payload)
				is.Equal(string(gb), string(wb))
			}
			// the draft's payload is at revision 0, where the paths say
			var p map[string]any
			pb, _ := json.Marshal(d.Payload)
			is.NoErr(json.Unmarshal(pb, &p))
			is.Equal(p["revision"], float64(0))
			root := p["tables"].([]any)[0].(map[string]any)["rows"].([]any)[0].(map[string]any)
			is.Equal(root[ColRevision], float64(0))
		})
	}
	_, err := ParseDraft([]byte(`{"sql": "x"}`))
	is.New(t).True(err != nil)
}
