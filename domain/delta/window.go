package delta

import (
	"errors"
	"fmt"
)

// ErrUnordered is returned when candidate deltas are not in strictly
// ascending id order: the feed's order is the id order, so a store that
// hands over anything else has a bug.
var ErrUnordered = errors.New("deltas out of id order")

// Window picks the next FIFO window from pending deltas ordered by id
// (the rows after the acknowledged watermark), skipping rows whose
// QuarantinedAt is set. It takes whole batches while they fit in limit and
// never splits one: when the first batch alone is larger than limit the
// window is that whole batch, because the consumer applies a window in one
// transaction and half a batch is an entity half written. hasMore reports
// rows left after the window.
//
// The caller must pass complete batches: if the rows end inside a batch,
// Window cannot see the rest. Batches are normally contiguous id ranges (the
// outbox writes one enrichment's rows together); should two batches
// interleave, the window grows until it closes both.
func Window(deltas []Delta, limit int) (window []Delta, hasMore bool) {
	return pick(deltas, limit, func(d Delta) bool { return d.QuarantinedAt != nil })
}

func pick(deltas []Delta, limit int, skip func(Delta) bool) ([]Delta, bool) {
	eligible := make([]int, 0, len(deltas)) // indexes into deltas
	last := map[string]int{}                // batch key -> its last position in eligible
	for i, d := range deltas {
		if skip(d) {
			continue
		}
		last[d.BatchKey()] = len(eligible)
		eligible = append(eligible, i)
	}
	end := 0
	for end < len(eligible) {
		next := end + 1
		for j := end; j < next; j++ {
			if l := last[deltas[eligible[j]].BatchKey()] + 1; l > next {
				next = l
			}
		}
		if end > 0 && next > limit {
			break
		}
		end = next
	}
	window := make([]Delta, end)
	for i, at := range eligible[:end] {
		window[i] = deltas[at]
	}
	return window, end < len(eligible)
}

// checkOrder reports an error unless ids strictly ascend.
func checkOrder(deltas []Delta) error {
	for i := 1; i < len(deltas); i++ {
		if deltas[i].ID <= deltas[i-1].ID {
			return fmt.Errorf("%w: id %d after %d", ErrUnordered, deltas[i].ID, deltas[i-1].ID)
		}
	}
	return nil
}
