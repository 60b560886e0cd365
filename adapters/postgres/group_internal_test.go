package postgres

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestGroup: items submitted while a write is in flight go together; when
// the group is refused, each item gets its own answer.
func TestGroup(t *testing.T) {
	is := is.New(t)
	errOdd := errors.New("odd")
	release := make(chan struct{})
	var mu sync.Mutex
	var groups [][]int
	g := &group[int]{
		all: func(items []int) error {
			mu.Lock()
			groups = append(groups, items)
			mu.Unlock()
			for _, n := range items {
				if n%2 == 1 {
					return errOdd
				}
			}
			return nil
		},
		one: func(n int) error {
			if n == 0 {
				<-release // the first write stays in flight while the others arrive
			}
			if n%2 == 1 {
				return errOdd
			}
			return nil
		},
	}
	first := make(chan error, 1)
	go func() { first <- g.submit(0) }()
	for {
		g.mu.Lock()
		writing := g.writing && len(g.waiting) == 0
		g.mu.Unlock()
		if writing {
			break
		}
		time.Sleep(time.Millisecond)
	}
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := 1; i <= 5; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = g.submit(i) }()
	}
	for {
		g.mu.Lock()
		n := len(g.waiting)
		g.mu.Unlock()
		if n == 5 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	is.NoErr(<-first)
	wg.Wait()
	for i := 1; i <= 5; i++ {
		is.Equal(errs[i] == errOdd, i%2 == 1) // each its own answer
	}
	is.Equal(len(groups), 1)
	is.Equal(len(groups[0]), 5) // the five waited and went together
}
