package llmlimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llmlimit"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// gateLLM holds every call until release is closed, counting the calls in
// flight per provider and per organization+provider.
type gateLLM struct {
	release chan struct{}
	mu      sync.Mutex
	now     map[string]int
	peak    map[string]int
	started chan string
}

func newGate() *gateLLM {
	return &gateLLM{release: make(chan struct{}), now: map[string]int{}, peak: map[string]int{}, started: make(chan string, 100)}
}

func (g *gateLLM) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	keys := []string{req.Model.Provider, req.OrgID + "/" + req.Model.Provider}
	g.mu.Lock()
	for _, k := range keys {
		g.now[k]++
		g.peak[k] = max(g.peak[k], g.now[k])
	}
	g.mu.Unlock()
	g.started <- req.OrgID + "/" + req.Model.Provider
	defer func() {
		g.mu.Lock()
		for _, k := range keys {
			g.now[k]--
		}
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
		return ports.LLMResponse{Text: "{}"}, nil
	case <-ctx.Done():
		return ports.LLMResponse{}, ctx.Err()
	}
}

func (g *gateLLM) peakOf(k string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak[k]
}

func TestLLM(t *testing.T) {
	call := func(l ports.LLM, org, provider string, queued *atomic.Int32) error {
		_, err := l.Generate(context.Background(), ports.LLMRequest{OrgID: org, Model: model.Key{Provider: provider, Model: "m"},
			Queued: func() { queued.Add(1) }})
		return err
	}
	tests := []struct {
		name   string
		limits llmlimit.Limits
		calls  []string // org/provider of each concurrent call
		peaks  map[string]int
		queued int32
	}{
		{"overall bound per provider", llmlimit.Limits{Overall: 2}, []string{"a/p", "a/p", "b/p", "b/p", "a/q"},
			map[string]int{"p": 2, "q": 1}, 2},
		{"per organization bound leaves others free", llmlimit.Limits{Overall: 10, PerOrg: 1}, []string{"a/p", "a/p", "a/p", "b/p"},
			map[string]int{"a/p": 1, "b/p": 1, "p": 2}, 2},
		{"a provider's own bound", llmlimit.Limits{Overall: 10, Providers: map[string]int{"p": 1}}, []string{"a/p", "b/p", "a/q", "b/q"},
			map[string]int{"p": 1, "q": 2}, 1},
		{"exempt providers are never bounded", llmlimit.Limits{Overall: 1, PerOrg: 1, Exempt: []string{"sandbox"}},
			[]string{"a/sandbox", "a/sandbox", "a/sandbox"}, map[string]int{"sandbox": 3}, 0},
		{"zero is no bound", llmlimit.Limits{}, []string{"a/p", "a/p", "a/p"}, map[string]int{"p": 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			g := newGate()
			l := llmlimit.New(g, tt.limits)
			var queued atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, len(tt.calls))
			for _, c := range tt.calls {
				org, provider, _ := cut(c)
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- call(l, org, provider, &queued)
				}()
			}
			// Let every call that can start, start; the rest queue.
			deadline := time.After(5 * time.Second)
			for started := 0; started < len(tt.calls)-int(tt.queued); started++ {
				select {
				case <-g.started:
				case <-deadline:
					t.Fatalf("only %d calls started", started)
				}
			}
			for queued.Load() < tt.queued {
				select {
				case <-deadline:
					t.Fatalf("%d calls queued, want %d", queued.Load(), tt.queued)
				case <-time.After(time.Millisecond):
				}
			}
			close(g.release)
			wg.Wait()
			close(errs)
			for err := range errs {
				is.NoErr(err)
			}
			for k, n := range tt.peaks {
				is.Equal(g.peakOf(k), n) // calls in flight at most
			}
			is.Equal(queued.Load(), tt.queued) // each waiting call said so once
		})
	}
}

func cut(s string) (org, provider string, ok bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// A call that gives up while it waits takes no slot with it.
func TestLLMGivingUpFreesNothingItDidNotTake(t *testing.T) {
	is := is.New(t)
	g := newGate()
	l := llmlimit.New(g, llmlimit.Limits{Overall: 1, PerOrg: 1})
	req := ports.LLMRequest{OrgID: "a", Model: model.Key{Provider: "p", Model: "m"}}
	done := make(chan error, 1)
	go func() {
		_, err := l.Generate(context.Background(), req)
		done <- err
	}()
	<-g.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := l.Generate(ctx, req) // waits for the org's slot, then gives up
	is.True(errors.Is(err, context.DeadlineExceeded))
	other := ports.LLMRequest{OrgID: "b", Model: model.Key{Provider: "p", Model: "m"}}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	_, err = l.Generate(ctx2, other) // has its org's slot, waits for the provider's, gives up
	is.True(errors.Is(err, context.DeadlineExceeded))
	close(g.release)
	is.NoErr(<-done)
	// Every slot is free again: two calls in turn go through.
	_, err = l.Generate(context.Background(), req)
	is.NoErr(err)
	_, err = l.Generate(context.Background(), other)
	is.NoErr(err)
}
