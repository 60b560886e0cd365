// Package fakeports holds small fakes of ports that tests of several
// packages need: a clock under the test's hand and a recorder of what a
// cache announces to other instances.
package fakeports

import (
	"context"
	"sync"
	"time"
)

// Clock is the Clock port under a test's hand; safe for concurrent use,
// so a test may move it while the code under test reads it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)} }

// Now implements ports.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Notes implements ports.Invalidations by recording what is published as
// "kind:id"; Listen hears nothing.
type Notes struct {
	mu   sync.Mutex
	sent []string
}

// Publish records kind:id.
func (n *Notes) Publish(_ context.Context, kind, id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, kind+":"+id)
	return nil
}

// PublishAll records kind:id for each id.
func (n *Notes) PublishAll(ctx context.Context, kind string, ids []string) error {
	for _, id := range ids {
		_ = n.Publish(ctx, kind, id)
	}
	return nil
}

// Listen waits for ctx's end.
func (n *Notes) Listen(ctx context.Context, _ func(kind, id string)) error {
	<-ctx.Done()
	return nil
}

// All returns what was published, in order.
func (n *Notes) All() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.sent...)
}

// ShiftClock is the system clock moved forward by an offset the test sets:
// time still passes, and a test jumps past a lease or a deadline.
type ShiftClock struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the system time plus the offset.
func (c *ShiftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

// Shift moves the clock forward by d.
func (c *ShiftClock) Shift(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}
