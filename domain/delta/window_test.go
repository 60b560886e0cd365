package delta_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/delta"
)

func TestWindow(t *testing.T) {
	quarantined := func(ds []delta.Delta, batch string) []delta.Delta {
		for i := range ds {
			if ds[i].BatchID == batch {
				ds[i].QuarantinedAt = &t0
			}
		}
		return ds
	}
	tests := []struct {
		name  string
		rows  []delta.Delta
		limit int
		want  []int64
		more  bool
	}{
		{"empty", nil, 10, []int64{}, false},
		{"all fit", feed(1, "a:2 b:3"), 10, span(1, 5), false},
		{"exact fit", feed(1, "a:2 b:3"), 5, span(1, 5), false},
		{"stops before a batch that does not fit", feed(1, "a:2 b:3"), 4, span(1, 2), true},
		{"first batch larger than limit goes whole", feed(1, "a:5 b:1"), 2, span(1, 5), true},
		{"limit 1 takes one batch", feed(1, "a:3 b:1"), 1, span(1, 3), true},
		{"rows without batch are single", feed(1, "-:3"), 2, span(1, 2), true},
		{"skips quarantined batch", quarantined(feed(1, "a:2 b:2 c:1"), "a"), 3, span(3, 5), false},
		{"quarantined batch in the middle", quarantined(feed(1, "a:1 b:2 c:1"), "b"), 2, []int64{1, 4}, false},
		{"interleaved batches close together", []delta.Delta{row(1, "a"), row(2, "b"), row(3, "a"), row(4, "c")},
			1, []int64{1, 2, 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w, more := delta.Window(tt.rows, tt.limit)
			is.Equal(ids(w), tt.want)
			is.Equal(more, tt.more)
		})
	}
}
