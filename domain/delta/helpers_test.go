package delta_test

import (
	"strconv"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/delta"
)

var t0 = time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)

// feed builds deltas with ids from first, from a spec such as "a:2 b:1 -:1":
// two rows of batch a, one of b, one without a batch id.
func feed(first int64, spec string) []delta.Delta {
	var out []delta.Delta
	id := first
	for _, part := range strings.Fields(spec) {
		name, n, _ := strings.Cut(part, ":")
		count, err := strconv.Atoi(n)
		if err != nil {
			panic(err)
		}
		if name == "-" {
			name = ""
		}
		for range count {
			out = append(out, row(id, name))
			id++
		}
	}
	return out
}

func row(id int64, batch string) delta.Delta {
	return delta.Delta{ID: id, Kind: delta.Data, Op: delta.Upsert, SQL: "INSERT", EntityType: "Company",
		Revision: 1, BatchID: batch, CreatedAt: t0}
}

func ids(ds []delta.Delta) []int64 {
	out := []int64{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

func span(from, to int64) []int64 {
	out := []int64{}
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
