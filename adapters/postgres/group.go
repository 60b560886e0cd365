package postgres

import "sync"

// group is the group commit of one kind of write: the items submitted while
// another write is in flight wait for it, then go together (all: one
// statement, one commit, one WAL flush for the lot). Nothing lingers on
// purpose, so a lone writer sees no delay. When all refuses a group, which
// PostgreSQL then rolled back whole, its items are written one by one, each
// with its own answer.
type group[T any] struct {
	all func(items []T) error
	one func(item T) error

	mu      sync.Mutex
	waiting []*grouped[T]
	writing bool
}

type grouped[T any] struct {
	item T
	done chan error
}

// submit writes item with the others waiting and returns its own answer.
// A caller that finds no write in flight writes its own batch itself (no
// hand-off on a lone write), then leaves what arrived meanwhile to a
// writer goroutine. It is not abandoned when the caller's context ends:
// the item may be written all the same, and the caller must learn whether
// it was.
func (g *group[T]) submit(item T) error {
	p := &grouped[T]{item: item, done: make(chan error, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, p)
	if g.writing {
		g.mu.Unlock()
		return <-p.done
	}
	g.writing = true
	g.mu.Unlock()
	if g.writeNext() {
		go g.write()
	}
	return <-p.done
}

// write writes batches until none waits.
func (g *group[T]) write() {
	for g.writeNext() {
	}
}

// writeNext writes what waits as one batch; false (and the group idle)
// when nothing waited after it.
func (g *group[T]) writeNext() bool {
	g.mu.Lock()
	batch := g.waiting
	g.waiting = nil
	g.mu.Unlock()
	if len(batch) > 1 {
		items := make([]T, len(batch))
		for i, p := range batch {
			items[i] = p.item
		}
		if g.all(items) == nil {
			for _, p := range batch {
				p.done <- nil
			}
			return g.more()
		}
	}
	for _, p := range batch {
		p.done <- g.one(p.item)
	}
	return g.more()
}

// more reports whether items wait for the next batch; when none does, the
// group becomes idle.
func (g *group[T]) more() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		g.writing = false
		return false
	}
	return true
}
