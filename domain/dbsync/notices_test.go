package dbsync_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
)

const noticeContract = `{"type":"object","title":"company","required":["domain","name"],"properties":{
	"domain":{"type":"string","database_key":true},"name":{"type":"string"},"city":{"type":"string"},
	"offices":{"type":"array","items":{"type":"object","required":["street"],"properties":{"street":{"type":"string"}}}}}}`

func noticeDB(t *testing.T, f dbsync.Fields) *dbsync.Database {
	t.Helper()
	name := "n"
	f.Name = &name
	d, err := dbsync.New("db", "org", f, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	d.Links = []dbsync.Link{{SchemaID: "s", EnrichmentEnabled: true}}
	return d
}

func TestNotices(t *testing.T) {
	for _, c := range []struct {
		name     string
		f        dbsync.Fields
		contract json.RawMessage
		nn, pk   []string // fragments of the effects
	}{
		{"defaults: nothing mirrored, surrogate keys", dbsync.Fields{}, json.RawMessage(noticeContract),
			[]string{"none of the 4 property columns", "declares 3 always present"},
			[]string{"2 tables are keyed by a surrogate ee_id", "key columns (domain)"}},
		{"mirrored NOT NULL, natural keys", dbsync.Fields{PropagateNotNull: ptr(true), PKStrategy: ptr(dbsync.Natural)},
			json.RawMessage(noticeContract),
			[]string{"2 of the 4 property columns are NOT NULL"},
			[]string{"2 tables get natural primary keys", "(domain)"}},
		{"unpublished: the numbers wait for the first publish", dbsync.Fields{}, nil,
			[]string{"not published yet"}, []string{"not published yet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			d := noticeDB(t, c.f)
			ns, err := d.Notices("s", c.contract)
			is.NoErr(err)
			is.Equal(len(ns), 2)
			is.Equal(ns[0].Option, "propagate_not_null")
			want := "false"
			if c.f.PropagateNotNull != nil {
				want = "true"
			}
			is.Equal(ns[0].Value, want)
			is.Equal(ns[1].Option, "pk_strategy")
			is.Equal(ns[1].Value, string(d.PKStrategy))
			is.True(ns[0].LockedAfterShip && ns[1].LockedAfterShip)
			for i, frags := range [][]string{c.nn, c.pk} {
				for _, f := range frags {
					if !strings.Contains(ns[i].Effect, f) {
						t.Errorf("effect %q lacks %q", ns[i].Effect, f)
					}
				}
			}
		})
	}
}

func TestSnapshotRequired(t *testing.T) {
	is := is.New(t)
	// Only a link to a registration that shipped, shipping now, of a
	// schema with state makes the consumer reload.
	is.True(dbsync.RelinkNeedsSnapshot(true, true, true))
	is.True(!dbsync.RelinkNeedsSnapshot(false, true, true))
	is.True(!dbsync.RelinkNeedsSnapshot(true, false, true))
	is.True(!dbsync.RelinkNeedsSnapshot(true, true, false))

	d := noticeDB(t, dbsync.Fields{})
	is.True(!d.SnapshotRequired())
	is.True(!d.SnapshotServed(10))
	d.SnapshotRequiredFrom = 7
	is.True(d.SnapshotRequired())
	is.True(!d.SnapshotServed(6)) // a snapshot older than the link
	is.True(d.SnapshotRequired())
	is.True(d.SnapshotServed(7))
	is.True(!d.SnapshotRequired())
}

func TestNoteContract(t *testing.T) {
	is := is.New(t)
	d := noticeDB(t, dbsync.Fields{})
	d.NoteContract("s", "h0") // nothing shipped: no contract followed
	is.Equal(d.Links[0].ShippedHash, "")
	ship, err := d.PlanShip("s", json.RawMessage(noticeContract), false)
	is.NoErr(err)
	is.True(ship != nil)
	d.NoteContract("s", "h1")
	is.Equal(d.Links[0].ShippedHash, "h1")
	d.NoteContract("other", "h2")
	is.Equal(d.Links[0].ShippedHash, "h1")
}
