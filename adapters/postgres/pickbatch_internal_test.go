package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/rotation"
)

// TestPickCombiner checks the combiner without a database: picks that
// arrive while a batch runs are served together by the next batch, which
// one of them leads; a pick whose context ends while it waits leaves the
// queue without stalling the others; a batch's picks get its answers.
func TestPickCombiner(t *testing.T) {
	is := is.New(t)
	var c pickCombiner
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	run := func(_ context.Context, orgID string, batch []*pickCall) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(batch))
		mu.Unlock()
		if first {
			<-release // hold the first batch while the others queue
		}
		for i, b := range batch {
			b.pick = rotation.Pick{Key: &rotation.Key{ID: orgID + "-" + b.req.Provider, Uses: int64(i)}}
		}
	}
	req := rotation.Request{Provider: "p", Now: time.Now()}
	results := make(chan rotation.Pick, 10)
	go func() { p, _ := c.pick(context.Background(), "o", req, run); results <- p }()
	waitQueued := func(n int) {
		t.Helper()
		for range 2000 {
			c.mu.Lock()
			q := c.queues["o\x00p"]
			got := q != nil && len(q.waiting) == n
			c.mu.Unlock()
			if got {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("never %d waiting", n)
	}
	waitQueued(0)
	// A pick that gives up while it waits leaves the queue.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { _, err := c.pick(ctx, "o", req, run); gaveUp <- err }()
	waitQueued(1)
	for range 5 {
		go func() { p, _ := c.pick(context.Background(), "o", req, run); results <- p }()
	}
	waitQueued(6)
	cancel()
	is.True(errors.Is(<-gaveUp, context.Canceled))
	waitQueued(5)
	close(release)
	for range 6 {
		is.Equal((<-results).Key.ID, "o-p")
	}
	mu.Lock()
	defer mu.Unlock()
	is.Equal(sizes, []int{1, 5}) // the five waiting were served in one batch
	c.mu.Lock()
	defer c.mu.Unlock()
	is.Equal(len(c.queues), 0) // the queue closed with its last batch
}

// stepClock is the Clock port under a test's hand.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// TestCandidatesAgeOnTheClock: the cached candidates age on the Clock
// port given to WithCandidateCache, never on the wall clock: a test's clock
// decides when they are read again. A write through the store drops them.
func TestCandidatesAgeOnTheClock(t *testing.T) {
	const ttl = 500 * time.Millisecond
	read := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC) // far from the wall clock
	tests := []struct {
		name   string
		now    time.Time
		forget bool
		hit    bool
	}{
		{"at the read", read, false, true},
		{"within the TTL", read.Add(ttl - time.Millisecond), false, true},
		{"at the TTL", read.Add(ttl), false, false},
		{"after a write here", read, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			clock := &stepClock{now: read}
			s := &ProviderKeyStore{picks: &pickCombiner{}}
			WithCandidateCache(ttl, 16, clock)(s)
			c := s.picks
			c.remember("o\x00p", candidates{})
			clock.set(tc.now)
			if tc.forget {
				c.forget()
			}
			_, hit := c.cached("o\x00p")
			is.Equal(hit, tc.hit)
			_, hit = c.cached("other\x00p")
			is.True(!hit) // nothing read for that group
		})
	}
}

// TestCandidatesWithoutCache: without WithCandidateCache nothing is kept.
func TestCandidatesWithoutCache(t *testing.T) {
	var c pickCombiner
	c.remember("o\x00p", candidates{})
	_, hit := c.cached("o\x00p")
	is.New(t).True(!hit)
}
