package delta_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/entityenrich/enrich/domain/delta"
)

// TestLeaseProperties drives the feed rules through random sequences of
// appends, claims, consumer applies and acks (some lost, some partial),
// rogue acks, time advances, quarantine reports, redrives and reads, and
// checks each step against a naive model and each delivery against what an
// idempotent consumer may rely on: no delta lost, none applied twice, none
// out of order, no window that splits a batch, no ack past delivery.
func TestLeaseProperties(t *testing.T) {
	const sequences, steps = 2000, 100
	for seed := uint64(1); seed <= sequences; seed++ {
		if s := runSim(seed, steps, false); s.failed != "" {
			s = runSim(seed, steps, true) // again, with the log
			t.Fatalf("seed %d: %s\nlog:\n%s", seed, s.failed, strings.Join(s.log, "\n"))
		}
	}
}

func runSim(seed uint64, steps int, logged bool) *sim {
	s := newSim(seed)
	s.logged = logged
	for i := 0; i < steps && s.failed == ""; i++ {
		s.step()
	}
	if s.failed == "" {
		s.drain()
	}
	return s
}

// sim is the feed under test (state and stored rows), a naive model of it,
// and an idempotent consumer.
type sim struct {
	rng    *rand.Rand
	now    time.Time
	lease  time.Duration
	set    delta.Settings
	st     delta.State
	rows   []delta.Delta // the store, in id order
	nextID int64
	batch  int
	origin map[int64]int64 // id -> the id it was redriven from (itself for originals)
	keys   map[int64]string
	log    []string
	logged bool
	failed string

	m model

	applied map[int64]bool // origins the consumer applied
	localWM int64          // the consumer's own watermark, kept with its data
}

// model is the naive reference: a watermark, what was delivered, the
// quarantined batches and one lease, recomputed from the rows each time.
type model struct {
	watermark, delivered int64
	quarantined          map[string]bool
	held                 bool
	upTo                 int64
	expires              time.Time
}

func newSim(seed uint64) *sim {
	rng := rand.New(rand.NewPCG(seed, seed*7919))
	return &sim{rng: rng, now: t0, lease: time.Duration(10+rng.IntN(110)) * time.Second,
		set:    delta.Settings{PurgeOnAck: rng.IntN(2) == 0},
		origin: map[int64]int64{}, keys: map[int64]string{}, applied: map[int64]bool{}, m: model{quarantined: map[string]bool{}}}
}

func (s *sim) fail(format string, args ...any) {
	if s.failed == "" {
		s.failed = fmt.Sprintf(format, args...)
	}
}

func (s *sim) logf(format string, args ...any) {
	if s.logged {
		s.log = append(s.log, fmt.Sprintf(format, args...))
	}
}

func (s *sim) step() {
	switch r := s.rng.IntN(100); {
	case r < 30:
		s.appendBatch(1 + s.rng.IntN(5))
	case r < 60:
		s.claim()
	case r < 68:
		s.rogueAck()
	case r < 83:
		s.now = s.now.Add(time.Duration(s.rng.IntN(90)) * time.Second)
	case r < 90:
		s.report()
	case r < 95:
		s.redrive()
	default:
		s.read()
	}
}

// appendBatch writes n rows of a new batch (a single row without a batch
// id one time in five).
func (s *sim) appendBatch(n int) {
	s.batch++
	name := fmt.Sprintf("b%d", s.batch)
	if n == 1 && s.rng.IntN(5) == 0 {
		name = ""
	}
	for i := 0; i < n; i++ {
		s.nextID++
		d := row(s.nextID, name)
		s.rows = append(s.rows, d)
		s.keys[d.ID] = d.BatchKey()
		s.origin[s.nextID] = s.nextID
	}
	s.logf("append %d rows of %q up to %d", n, name, s.nextID)
}

func (s *sim) key(id int64) string { return s.keys[id] }

// pending is the model's FIFO feed.
func (s *sim) pending() []delta.Delta {
	var out []delta.Delta
	for _, d := range s.rows {
		if d.ID > s.m.watermark && !s.m.quarantined[d.BatchKey()] {
			out = append(out, d)
		}
	}
	return out
}

// modelWindow groups pending rows into batches (contiguous here) and takes
// whole ones: the first always, the next while the total stays in limit.
func (s *sim) modelWindow(pending []delta.Delta, limit int) []int64 {
	var groups [][]int64
	for _, d := range pending {
		if n := len(groups); n > 0 && s.key(groups[n-1][0]) == d.BatchKey() {
			groups[n-1] = append(groups[n-1], d.ID)
			continue
		}
		groups = append(groups, []int64{d.ID})
	}
	out := []int64{}
	for i, g := range groups {
		if i > 0 && len(out)+len(g) > limit {
			break
		}
		out = append(out, g...)
	}
	return out
}

// candidates is the store's query: rows after the watermark, in id order.
func (s *sim) candidates() []delta.Delta {
	i, _ := slices.BinarySearchFunc(s.rows, s.st.Watermark+1, func(d delta.Delta, id int64) int { return int(d.ID - id) })
	return s.rows[i:]
}

func (s *sim) claim() {
	limit := 1 + s.rng.IntN(8)
	before := s.st
	res, next, err := delta.Claim(s.st, s.now, s.lease, s.candidates(), limit)
	if err != nil {
		s.fail("claim: %v", err)
		return
	}
	s.logf("claim limit %d at %s: %v busy=%v", limit, s.now.Sub(t0), ids(res.Deltas), res.Busy)
	if s.m.held && s.now.Before(s.m.expires) {
		if !res.Busy || len(res.Deltas) != 0 || !res.LeaseExpiresAt.Equal(s.m.expires) || !equalState(next, before) {
			s.fail("claim under a live lease delivered %v busy=%v", ids(res.Deltas), res.Busy)
		}
		return
	}
	pending := s.pending()
	want := s.modelWindow(pending, limit)
	if got := ids(res.Deltas); !slices.Equal(got, want) {
		s.fail("claim window %v, model %v", got, want)
		return
	}
	s.m.held = len(want) > 0
	if s.m.held {
		s.m.upTo, s.m.expires = want[len(want)-1], s.now.Add(s.lease)
		s.m.delivered = max(s.m.delivered, s.m.upTo)
	}
	s.st = next
	s.checkWindow(res.Deltas, pending, limit)
	s.consume(res.Deltas, pending)
}

// checkWindow checks the delivery itself: nothing acknowledged, ascending,
// whole batches, within the limit unless it is one batch.
func (s *sim) checkWindow(w, pending []delta.Delta, limit int) {
	keys := map[string]bool{}
	for i, d := range w {
		if d.ID <= s.m.watermark {
			s.fail("delivered acknowledged delta %d", d.ID)
		}
		if i > 0 && d.ID <= w[i-1].ID {
			s.fail("window out of order: %v", ids(w))
		}
		keys[d.BatchKey()] = true
	}
	in := map[int64]bool{}
	for _, d := range w {
		in[d.ID] = true
	}
	for _, d := range pending {
		if keys[d.BatchKey()] && !in[d.ID] {
			s.fail("window %v splits batch %q (misses %d)", ids(w), d.BatchKey(), d.ID)
		}
	}
	if len(w) > limit && len(keys) != 1 {
		s.fail("window of %d rows over limit %d holds %d batches", len(w), limit, len(keys))
	}
}

// consume plays the consumer: it applies the window in one transaction
// (skipping what its own watermark says it has) and acks, or its ack is
// lost, or it crashes first, or its database refuses a batch and it
// reports it.
func (s *sim) consume(w, pending []delta.Delta) {
	if len(w) == 0 {
		return
	}
	switch r := s.rng.IntN(100); {
	case r < 10: // crashed before applying
		return
	case r < 18: // refused: report one row, apply nothing
		d := w[s.rng.IntN(len(w))]
		s.doReport(d)
		return
	}
	s.apply(w, pending)
	switch r := s.rng.IntN(100); {
	case r < 15: // crashed after apply, before ack
	case r < 30: // partial ack inside what it applied
		s.ack(s.m.watermark + 1 + s.rng.Int64N(s.localWM-s.m.watermark))
	default:
		s.ack(s.localWM)
	}
}

func (s *sim) apply(w, pending []delta.Delta) {
	first := true
	for _, d := range w {
		if d.ID <= s.localWM {
			if !first {
				s.fail("already-applied delta %d after new ones in %v", d.ID, ids(w))
			}
			continue
		}
		if first {
			// Nothing pending may lie between the consumer's watermark and
			// the first new delta: that would be a lost or reordered delta.
			for _, p := range pending {
				if p.ID > s.localWM && p.ID < d.ID {
					s.fail("delta %d skipped: consumer at %d got %d first", p.ID, s.localWM, d.ID)
				}
			}
			first = false
		}
		o := s.origin[d.ID]
		if s.applied[o] && o == d.ID {
			s.fail("delta %d applied twice", d.ID)
		}
		s.applied[o] = true
		s.localWM = d.ID
	}
}

func (s *sim) ack(upTo int64) {
	res, next, err := delta.Ack(s.st, upTo, s.now, s.set)
	s.logf("ack %d: %+v %v", upTo, res, err)
	if !s.modelAck(upTo, err) {
		return
	}
	s.st = next
	if res.PurgeDeltas {
		s.rows = slices.DeleteFunc(s.rows, func(d delta.Delta) bool {
			return res.Acked.Contains(d.ID) && !s.m.quarantined[d.BatchKey()]
		})
	}
}

// modelAck checks an ack's outcome against the model and advances it;
// it reports whether the ack took effect.
func (s *sim) modelAck(upTo int64, err error) bool {
	switch {
	case upTo <= s.m.watermark:
		if err != nil {
			s.fail("repeat ack %d: %v", upTo, err)
		}
		return false
	case upTo > s.m.delivered:
		if !errors.Is(err, delta.ErrAckBeyondDelivered) {
			s.fail("ack %d past delivered %d: %v", upTo, s.m.delivered, err)
		}
		return false
	case err != nil:
		s.fail("ack %d: %v", upTo, err)
		return false
	}
	s.m.watermark = upTo
	if s.m.held && (upTo >= s.m.upTo || !s.now.Before(s.m.expires)) {
		s.m.held = false
	}
	return true
}

// rogueAck checks the bound with an arbitrary id; it is kept only when the
// consumer really applied that far (an ack of unapplied deltas is a
// consumer bug the feed cannot see).
func (s *sim) rogueAck() {
	upTo := s.rng.Int64N(s.nextID+3) - 1
	if upTo < 0 {
		_, _, err := delta.Ack(s.st, upTo, s.now, s.set)
		if !errors.Is(err, delta.ErrInvalidParam) {
			s.fail("negative ack: %v", err)
		}
		return
	}
	if upTo <= s.localWM {
		s.ack(upTo)
		return
	}
	_, next, err := delta.Ack(s.st, upTo, s.now, s.set)
	if (upTo > s.m.delivered && upTo > s.m.watermark) != errors.Is(err, delta.ErrAckBeyondDelivered) {
		s.fail("rogue ack %d (delivered %d, watermark %d): %v", upTo, s.m.delivered, s.m.watermark, err)
	}
	_ = next
}

// report quarantines a random stored row, as another consumer might.
func (s *sim) report() {
	if len(s.rows) == 0 {
		return
	}
	s.doReport(s.rows[s.rng.IntN(len(s.rows))])
}

func (s *sim) doReport(d delta.Delta) {
	res, next, err := delta.Report(s.st, d)
	s.logf("report %d: %+v %v", d.ID, res, err)
	key := d.BatchKey()
	switch {
	case s.m.quarantined[key]:
		if err != nil || !res.Already {
			s.fail("repeat report %d: %+v %v", d.ID, res, err)
		}
		return
	case d.ID <= s.m.watermark:
		if !errors.Is(err, delta.ErrAlreadyAcked) {
			s.fail("report of acked %d: %v", d.ID, err)
		}
		return
	case d.ID > s.m.delivered:
		if !errors.Is(err, delta.ErrNotDelivered) {
			s.fail("report of undelivered %d: %v", d.ID, err)
		}
		return
	case err != nil:
		s.fail("report %d: %v", d.ID, err)
		return
	}
	s.m.quarantined[key] = true
	if s.m.held && d.ID <= s.m.upTo {
		s.m.held = false
	}
	s.st = next
}

// redrive takes one quarantined batch out and appends its copies at the tail.
func (s *sim) redrive() {
	for key := range s.m.quarantined {
		var rows []delta.Delta
		for _, d := range s.rows {
			if d.BatchKey() == key {
				rows = append(rows, d)
			}
		}
		s.st = delta.Release(s.st, key)
		delete(s.m.quarantined, key)
		s.rows = slices.DeleteFunc(s.rows, func(d delta.Delta) bool { return d.BatchKey() == key })
		groups := delta.Requeue(rows) // one batch: one group, in id order
		if len(groups) != 1 || len(groups[0]) != len(rows) {
			s.fail("requeue of one batch gave %d groups", len(groups))
			return
		}
		slices.SortFunc(rows, func(a, b delta.Delta) int { return int(a.ID - b.ID) })
		first := s.nextID + 1
		s.appendBatch(len(rows))
		for i, d := range rows {
			s.origin[first+int64(i)] = s.origin[d.ID]
		}
		s.logf("redrive %q", key)
		return
	}
}

// read checks that a plain read shows exactly the model's pending rows and
// changes nothing.
func (s *sim) read() {
	before := s.st
	p, err := delta.Read(s.st, s.now, delta.ChangesQuery{Limit: delta.MaxLimit, Include: delta.Pending,
		Order: delta.Asc, Format: "json"}, s.rows)
	if err != nil {
		s.fail("read: %v", err)
		return
	}
	if !slices.Equal(ids(p.Deltas), ids(s.pending())) || !equalState(s.st, before) {
		s.fail("read %v, model pending %v", ids(p.Deltas), ids(s.pending()))
	}
}

// drain lets every lease expire and consumes to the head, then checks that
// every original delta was applied or sits in quarantine.
func (s *sim) drain() {
	for i := 0; i < 10000 && s.failed == ""; i++ {
		s.now = s.now.Add(s.lease)
		res, next, err := delta.Claim(s.st, s.now, s.lease, s.candidates(), 8)
		if err != nil {
			s.fail("drain claim: %v", err)
			return
		}
		if len(res.Deltas) == 0 {
			break
		}
		s.st = next
		s.m.held, s.m.upTo, s.m.expires = true, res.Deltas[len(res.Deltas)-1].ID, s.now.Add(s.lease)
		s.m.delivered = max(s.m.delivered, s.m.upTo)
		s.apply(res.Deltas, s.pending())
		s.ack(s.localWM)
	}
	quarantinedOrigins := map[int64]bool{}
	for _, d := range s.rows {
		if s.m.quarantined[d.BatchKey()] {
			quarantinedOrigins[s.origin[d.ID]] = true
		}
	}
	for id := int64(1); id <= s.nextID; id++ {
		if s.origin[id] == id && !s.applied[id] && !quarantinedOrigins[id] {
			s.fail("delta %d lost", id)
		}
	}
}

func equalState(a, b delta.State) bool {
	return a.Watermark == b.Watermark && a.Delivered == b.Delivered && a.Lease == b.Lease &&
		a.Claims == b.Claims && slices.Equal(a.Quarantined, b.Quarantined)
}
