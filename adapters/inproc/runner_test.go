package inproc_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/ports"
)

func TestLimits(t *testing.T) {
	is := is.New(t)
	r := inproc.New(inproc.Config{Workers: 3, PerOrg: 2})
	var cur, peak, orgA, peakA atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		org := "a"
		if i%2 == 1 {
			org = "b"
		}
		wg.Add(1)
		is.NoErr(r.Submit(string(rune('0'+i)), org, func(ctx context.Context) {
			defer wg.Done()
			n := cur.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			if org == "a" {
				m := orgA.Add(1)
				for p := peakA.Load(); m > p && !peakA.CompareAndSwap(p, m); p = peakA.Load() {
				}
				defer orgA.Add(-1)
			}
			<-release
			cur.Add(-1)
		}))
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	is.True(peak.Load() <= 3)
	is.True(peakA.Load() <= 2)
	is.NoErr(r.Shutdown(context.Background()))
}

func TestCancelRunning(t *testing.T) {
	is := is.New(t)
	r := inproc.New(inproc.Config{})
	started, done := make(chan struct{}), make(chan error, 1)
	is.NoErr(r.Submit("j", "o", func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		done <- ctx.Err()
	}))
	<-started
	is.True(r.Cancel("j"))
	is.True(errors.Is(<-done, context.Canceled))
	is.True(!r.Cancel("nope"))
}

func TestShutdownCancelsQueuedAndRunning(t *testing.T) {
	is := is.New(t)
	r := inproc.New(inproc.Config{Workers: 1})
	var cancelled atomic.Int32
	for _, id := range []string{"a", "b", "c"} {
		is.NoErr(r.Submit(id, "o", func(ctx context.Context) {
			<-ctx.Done()
			cancelled.Add(1)
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := r.Shutdown(ctx)
	is.True(errors.Is(err, context.DeadlineExceeded))
	is.Equal(cancelled.Load(), int32(3))
	is.Equal(len(r.Running()), 0)
	err = r.Submit("d", "o", func(context.Context) {})
	is.True(errors.Is(err, ports.ErrCapacity))
}

func TestDuplicateAndQueueFull(t *testing.T) {
	is := is.New(t)
	r := inproc.New(inproc.Config{Workers: 1, Queue: 1})
	block := make(chan struct{})
	is.NoErr(r.Submit("a", "o", func(context.Context) { <-block }))
	is.True(errors.Is(r.Submit("a", "o", func(context.Context) {}), ports.ErrConflict))
	is.NoErr(r.Submit("b", "o", func(context.Context) {}))
	is.True(errors.Is(r.Submit("c", "o", func(context.Context) {}), ports.ErrCapacity))
	close(block)
	is.NoErr(r.Shutdown(context.Background()))
}
