package postgres

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestFeedOrder: every writer appends to feeds in one order, by id
// byte-wise (as lockFeedsSQL's COLLATE "C" sorts), each feed once, so two
// units that share feeds wait for each other rather than deadlock.
func TestFeedOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, []string{}},
		{"sorted and once", []string{"db-b", "db-a", "db-b", "db-c"}, []string{"db-a", "db-b", "db-c"}},
		{"byte-wise, not by a collation", []string{"b", "B", "a", "_x", "Ä"}, []string{"B", "_x", "a", "b", "Ä"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			in := append([]string(nil), c.in...)
			got := feedOrder(in)
			if got == nil {
				got = []string{}
			}
			is.Equal(got, c.want)
			is.Equal(in, c.in) // the input is left as it was
		})
	}
	is := is.New(t)
	m := map[string]int{"db-2": 1, "db-10": 2, "db-1": 3}
	is.Equal(feedsOf(m), []string{"db-1", "db-10", "db-2"})
	is.True(strings.Contains(lockFeedsSQL, `ORDER BY f.database_id COLLATE "C"`))
}
