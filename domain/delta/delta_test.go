package delta_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/delta"
)

func TestParseKindAndOp(t *testing.T) {
	is := is.New(t)
	for _, k := range delta.Kinds() {
		got, err := delta.ParseKind(string(k))
		is.NoErr(err)
		is.Equal(got, k)
	}
	for _, o := range delta.Ops() {
		got, err := delta.ParseOp(string(o))
		is.NoErr(err)
		is.Equal(got, o)
	}
	_, err := delta.ParseKind("DATA")
	is.True(errors.Is(err, delta.ErrInvalid))
	_, err = delta.ParseOp("insert")
	is.True(errors.Is(err, delta.ErrInvalid))
}

func TestKindAllows(t *testing.T) {
	want := map[delta.Kind]map[delta.Op]bool{
		delta.Data:   {delta.Upsert: true, delta.Delete: true, delta.Migrate: false},
		delta.Schema: {delta.Upsert: false, delta.Delete: false, delta.Migrate: true},
		"other":      {delta.Upsert: false, delta.Delete: false, delta.Migrate: false},
	}
	for k, ops := range want {
		for op, ok := range ops {
			is.New(t).Equal(k.Allows(op), ok) // kind × op
		}
	}
}

func TestDeltaValidate(t *testing.T) {
	good := delta.Delta{ID: 1, Kind: delta.Data, Op: delta.Upsert, SQL: "INSERT", EntityType: "Company", Revision: 1,
		Payload: json.RawMessage(`{"a":1}`)}
	ddl := delta.Delta{ID: 2, Kind: delta.Schema, Op: delta.Migrate, SQL: "CREATE TABLE t ()"}
	tests := []struct {
		name string
		edit func(*delta.Delta)
		base delta.Delta
		ok   bool
	}{
		{"data upsert", func(*delta.Delta) {}, good, true},
		{"data delete", func(d *delta.Delta) { d.Op = delta.Delete }, good, true},
		{"schema migrate", func(*delta.Delta) {}, ddl, true},
		{"zero id", func(d *delta.Delta) { d.ID = 0 }, good, false},
		{"data migrate", func(d *delta.Delta) { d.Op = delta.Migrate }, good, false},
		{"schema upsert", func(d *delta.Delta) { d.Op = delta.Upsert }, ddl, false},
		{"unknown kind", func(d *delta.Delta) { d.Kind = "x" }, good, false},
		{"no sql", func(d *delta.Delta) { d.SQL = "" }, good, false},
		{"bad payload", func(d *delta.Delta) { d.Payload = json.RawMessage(`{`) }, good, false},
		{"data without entity type", func(d *delta.Delta) { d.EntityType = "" }, good, false},
		{"data without revision", func(d *delta.Delta) { d.Revision = 0 }, good, false},
		{"schema with revision", func(d *delta.Delta) { d.Revision = 1 }, ddl, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			d := tt.base
			tt.edit(&d)
			err := d.Validate()
			is.Equal(err == nil, tt.ok)
			if !tt.ok {
				is.True(errors.Is(err, delta.ErrInvalid))
			}
		})
	}
}

func TestBatchKey(t *testing.T) {
	is := is.New(t)
	is.Equal(delta.Delta{ID: 7, BatchID: "b"}.BatchKey(), "b")
	is.Equal(delta.Delta{ID: 7}.BatchKey(), "#7")
	is.True(delta.Delta{ID: 7}.BatchKey() != delta.Delta{ID: 8}.BatchKey())
}
