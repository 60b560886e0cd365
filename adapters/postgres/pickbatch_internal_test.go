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

// TestCandidatesAgeOnThePicksTime: the cached candidates age on the picks'
// own time (rotation.Request.Now, from the caller's Clock), never on the
// wall clock: a test's clock decides when they are read again.
func TestCandidatesAgeOnThePicksTime(t *testing.T) {
	read := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC) // far from the wall clock
	tests := []struct {
		name string
		now  time.Time
		hit  bool
	}{
		{"at the read", read, true},
		{"within the TTL", read.Add(candidatesTTL - time.Millisecond), true},
		{"at the TTL", read.Add(candidatesTTL), false},
		{"a clock set back", read.Add(-time.Millisecond), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var c pickCombiner
			c.remember("o\x00p", candidates{at: read})
			_, hit := c.cached("o\x00p", tc.now)
			is.Equal(hit, tc.hit)
			_, hit = c.cached("other\x00p", tc.now)
			is.True(!hit) // nothing read for that group
		})
	}
}
