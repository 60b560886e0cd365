package dbsync_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
)

// TestPGText: the text PostgreSQL 15 prints for each key type (checked
// with psql under dbsync.ChecksumSettings).
func TestPGText(t *testing.T) {
	cases := []struct {
		v    any
		typ  string
		want string
	}{
		{"Acme", "text", "Acme"},
		{"ab  ", "char(4)", "ab"},
		{"ABCDEF00-0000-0000-0000-000000000000", "uuid", "abcdef00-0000-0000-0000-000000000000"},
		{json.Number("1.0"), "bigint", "1"},
		{json.Number("1e3"), "integer", "1000"},
		{7, "integer", "7"},
		{json.Number("1.50"), "numeric", "1.50"},
		{json.Number("1.5e-3"), "numeric", "0.0015"},
		{json.Number("1.50e1"), "numeric", "15.0"},
		{json.Number("-0"), "numeric", "0"},
		{json.Number("1e6"), "double precision", "1000000"},
		{json.Number("1e15"), "double precision", "1e+15"},
		{json.Number("0.0001"), "double precision", "0.0001"},
		{json.Number("0.00001"), "double precision", "1e-05"},
		{json.Number("123456789012345678"), "double precision", "1.2345678901234568e+17"},
		{true, "boolean", "true"},
		{"2024-01-02", "date", "2024-01-02"},
		{"2024-01-02T05:04:05.1234567+02:00", "timestamptz", "2024-01-02 03:04:05.123457+00"},
		{"2024-01-02T03:04:05Z", "timestamptz", "2024-01-02 03:04:05+00"},
		{"12:30", "time", "12:30:00"},
		{"12:30:01.500", "time", "12:30:01.5"},
	}
	for _, c := range cases {
		got, err := dbsync.PGText(c.v, c.typ)
		if err != nil || got != c.want {
			t.Errorf("PGText(%v, %s) = %q, %v; want %q", c.v, c.typ, got, err, c.want)
		}
	}
	for _, bad := range []struct {
		v   any
		typ string
	}{{nil, "text"}, {json.Number("1.5"), "bigint"}, {"x", "boolean"}, {"{}", "jsonb"}} {
		if _, err := dbsync.PGText(bad.v, bad.typ); err == nil {
			t.Errorf("PGText(%v, %s): no error", bad.v, bad.typ)
		}
	}
}

// TestChecksumOrderFree: rows add up in any order; an empty table is 0.
func TestChecksumOrderFree(t *testing.T) {
	is := is.New(t)
	a, b := dbsync.NewChecksum(), dbsync.NewChecksum()
	for _, r := range []string{"x\x1f1", "y\x1f2", "z\x1f3"} {
		a.AddRow("t", r)
	}
	for _, r := range []string{"z\x1f3", "x\x1f1", "y\x1f2"} {
		b.AddRow("t", r)
	}
	ca, ha := a.Result()
	cb, hb := b.Result()
	is.Equal(ca, cb)
	is.Equal(ha, hb)
	is.Equal(ca["t"], int64(3))
	// md5('a') = 0cc175b9c0f1b6a831c399e269772661; its first 15 hex digits
	// are 57446577476672362, as PostgreSQL's bit(60) reading gives.
	c := dbsync.NewChecksum()
	c.AddRow("t", "a")
	_, h := c.Result()
	is.Equal(h["t"], "57446577476672362")
}

func TestSnapshotHeader(t *testing.T) {
	is := is.New(t)
	h := dbsync.SnapshotHeader("db\n1", 42)
	is.Equal(h, "-- enrich snapshot of database db?1 as of delta 42\n")
	n, ok := dbsync.SnapshotDeltaID(h[:len(h)-1])
	is.True(ok)
	is.Equal(n, int64(42))
	_, ok = dbsync.SnapshotDeltaID("-- something else")
	is.True(!ok)
}
