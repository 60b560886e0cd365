package cache

import (
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/entityenrich/enrich/ports"
)

// clock gives otter the time of the Clock port, so that a test's clock
// decides when an entry expires. It counts from start on the monotonic
// clock when the port's times carry it (time.Now's do), so that a step of
// the wall clock neither ages nor revives an entry.
type clock struct {
	ports.Clock
	start time.Time
}

func newClock(c ports.Clock) clock { return clock{Clock: c, start: c.Now()} }

func (c clock) NowNano() int64 { return c.start.UnixNano() + int64(c.Now().Sub(c.start)) }

// Tick drives otter's periodic removal of expired entries; reads check
// expiry by NowNano whatever the ticks. The ticker is left to the garbage
// collector: otter's clean-up goroutine ends with its cache.
func (clock) Tick(d time.Duration) <-chan time.Time { return time.NewTicker(d).C }

// expiring returns a cache of at most size entries (or of weight size by
// weigh, when weigh is set; size <= 0: no bound) that live for ttl after
// their write, by c.
func expiring[K comparable, V any](c ports.Clock, ttl time.Duration, size int, weigh func(K, V) uint32) *otter.Cache[K, V] {
	o := &otter.Options[K, V]{ExpiryCalculator: otter.ExpiryWriting[K, V](ttl), Clock: newClock(c)}
	switch {
	case size <= 0:
	case weigh != nil:
		o.MaximumWeight, o.Weigher = uint64(size), weigh
	default:
		o.MaximumSize = size
	}
	return otter.Must(o)
}
