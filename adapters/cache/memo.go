package cache

import (
	"context"
	"crypto/sha256"
	"encoding/json"

	"github.com/maypok86/otter/v2"

	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// Memo is ports.Memo: at most size values, the least useful dropped first.
type Memo[K comparable, V any] struct {
	c *otter.Cache[K, V]
}

var _ ports.Memo[string, int] = (*Memo[string, int])(nil)

// NewMemo returns a Memo of at most size values (size <= 0: no bound).
func NewMemo[K comparable, V any](size int) *Memo[K, V] {
	return &Memo[K, V]{c: otter.Must(&otter.Options[K, V]{MaximumSize: max(size, 0)})}
}

// Get returns key's value, building it on a miss (ports.Memo).
func (m *Memo[K, V]) Get(ctx context.Context, key K, build func(ctx context.Context, key K) (V, error)) (V, error) {
	return m.c.Get(ctx, key, otter.LoaderFunc[K, V](build))
}

// Compiler is a ports.SchemaCompiler that compiles each document once, by
// content: compiling is the costliest step of preparing a job, and the same
// schema is enriched again and again. A document that does not compile is
// compiled again each time.
type Compiler struct {
	next ports.SchemaCompiler
	memo *Memo[[sha256.Size]byte, ports.Validator]
}

var _ ports.SchemaCompiler = (*Compiler)(nil)

// NewCompiler keeps up to size of next's validators (size <= 0: no bound).
func NewCompiler(next ports.SchemaCompiler, size int) *Compiler {
	return &Compiler{next: next, memo: NewMemo[[sha256.Size]byte, ports.Validator](size)}
}

// Compile returns doc's validator (ports.SchemaCompiler). next holds the
// document to the limits: one past them is never kept, so a document
// found here is within them. Concurrent calls for one
// document share one compilation under the first caller's ctx; a caller
// that joined it and is still live when that ctx ends loads again (the
// Memo's Get), so it never gets another request's context error.
func (c *Compiler) Compile(ctx context.Context, doc json.RawMessage) (ports.Validator, error) {
	return c.memo.Get(ctx, sha256.Sum256(doc), func(ctx context.Context, _ [sha256.Size]byte) (ports.Validator, error) {
		return c.next.Compile(ctx, doc)
	})
}

// Limits are next's (ports.SchemaCompiler).
func (c *Compiler) Limits() schema.Limits { return c.next.Limits() }
