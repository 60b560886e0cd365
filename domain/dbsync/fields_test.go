package dbsync_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
)

func ptr[T any](v T) *T { return &v }

func TestNewDefaults(t *testing.T) {
	is := is.New(t)
	now := time.Unix(100, 0)
	d, err := dbsync.New("id", "org", dbsync.Fields{Name: ptr("  warehouse ")}, now)
	is.NoErr(err)
	is.Equal(d.Name, "warehouse")
	is.Equal(d.Dialect, "postgres")
	is.Equal(d.PageLimit, 100)
	is.Equal(d.OnGaps, dbsync.SkipChildren)
	is.Equal(d.PKStrategy, dbsync.Surrogate)
	is.Equal(d.IndexScalars, dbsync.IndexFilterable)
	is.Equal(d.NotifyDebounceS, 30)
	is.Equal(d.MaxThresholdTimeoutS, 300)
	is.True(!d.PurgeOnAck && !d.PurgeEntityState && !d.PropagateNotNull)
	is.Equal(d.KeyLanguage, "")
	is.Equal(d.CreatedAt, now)
}

func TestFieldErrors(t *testing.T) {
	for _, c := range []struct {
		field string
		f     dbsync.Fields
	}{
		{"name", dbsync.Fields{}},
		{"name", dbsync.Fields{Name: ptr("  ")}},
		{"name", dbsync.Fields{Name: ptr("a\x00b")}},
		{"name", dbsync.Fields{Name: ptr(string(make([]byte, 201)))}},
		{"dialect", dbsync.Fields{Name: ptr("n"), Dialect: ptr("mysql")}},
		{"page_limit", dbsync.Fields{Name: ptr("n"), PageLimit: ptr(0)}},
		{"page_limit", dbsync.Fields{Name: ptr("n"), PageLimit: ptr(1001)}},
		{"on_gaps", dbsync.Fields{Name: ptr("n"), OnGaps: ptr(dbsync.OnGaps("x"))}},
		{"pk_strategy", dbsync.Fields{Name: ptr("n"), PKStrategy: ptr(dbsync.PKStrategy(""))}},
		{"index_scalars", dbsync.Fields{Name: ptr("n"), IndexScalars: ptr(dbsync.IndexScalars("some"))}},
		{"notify_debounce_s", dbsync.Fields{Name: ptr("n"), NotifyDebounceS: ptr(-1)}},
		{"notify_debounce_s", dbsync.Fields{Name: ptr("n"), NotifyDebounceS: ptr(3601), MaxThresholdTimeoutS: ptr(86400)}},
		{"max_threshold_timeout_s", dbsync.Fields{Name: ptr("n"), MaxThresholdTimeoutS: ptr(0)}},
		{"max_threshold_timeout_s", dbsync.Fields{Name: ptr("n"), MaxThresholdTimeoutS: ptr(86401)}},
		{"max_threshold_timeout_s", dbsync.Fields{Name: ptr("n"), NotifyDebounceS: ptr(60), MaxThresholdTimeoutS: ptr(59)}},
		{"key_language", dbsync.Fields{Name: ptr("n"), KeyLanguage: ptr("en_US")}},
		{"key_language", dbsync.Fields{Name: ptr("n"), KeyLanguage: ptr("1en")}},
	} {
		t.Run(c.field, func(t *testing.T) {
			is := is.New(t)
			_, err := dbsync.New("id", "org", c.f, time.Now())
			var fe *dbsync.FieldError
			is.True(errors.As(err, &fe))
			is.Equal(fe.Field, c.field)
			is.True(errors.Is(err, dbsync.ErrInvalid))
		})
	}
}

func TestApplyKeepsOnError(t *testing.T) {
	is := is.New(t)
	d, err := dbsync.New("id", "org", dbsync.Fields{Name: ptr("n"), KeyLanguage: ptr("pt-BR")}, time.Unix(1, 0))
	is.NoErr(err)
	before := *d
	is.True(d.Apply(dbsync.Fields{Name: ptr("m"), PageLimit: ptr(-1)}, time.Unix(2, 0)) != nil)
	is.Equal(*d, before)
	is.NoErr(d.Apply(dbsync.Fields{PageLimit: ptr(1000)}, time.Unix(2, 0)))
	is.Equal(d.PageLimit, 1000)
	is.Equal(d.Name, "n")
	is.Equal(d.UpdatedAt, time.Unix(2, 0))
}

func TestCheckLocked(t *testing.T) {
	is := is.New(t)
	d, err := dbsync.New("id", "org", dbsync.Fields{Name: ptr("n")}, time.Now())
	is.NoErr(err)
	d.Links = []dbsync.Link{{SchemaID: "s"}}
	natural := ptr(dbsync.Natural)
	is.NoErr(d.CheckLocked(dbsync.Fields{PKStrategy: natural})) // nothing shipped yet
	d.Links[0].Shipped = &relmap.Map{}
	is.True(errors.Is(d.CheckLocked(dbsync.Fields{PKStrategy: natural}), dbsync.ErrLocked))
	is.True(errors.Is(d.CheckLocked(dbsync.Fields{PropagateNotNull: ptr(true)}), dbsync.ErrLocked))
	is.True(errors.Is(d.CheckLocked(dbsync.Fields{KeyLanguage: ptr("de")}), dbsync.ErrLocked))
	is.NoErr(d.CheckLocked(dbsync.Fields{PKStrategy: ptr(dbsync.Surrogate), PageLimit: ptr(5), IndexScalars: ptr(dbsync.IndexAll)}))
}
