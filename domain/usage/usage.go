// Package usage is the ledger of LLM calls: one append-only entry per call,
// with who paid (the key's source), the tokens, the cost and how the call
// ended. It feeds cost analytics and, later, billing.
package usage

import "time"

// OK is the Outcome of a call that answered; a failed call's Outcome is the
// job error code its failure maps to (rate_limited, timeout, ...).
const OK = "ok"

// Entry is one LLM call. Entries are never changed or removed.
type Entry struct {
	ID    string
	OrgID string
	JobID string
	// Task is what the call was for: the job's type (enrichment,
	// schema_generation, ...) or, for a call outside a job, its own task.
	Task string
	// Model is the composite key <provider>::<model>.
	Model string
	// KeySource is organization or global; empty for a keyless provider.
	KeySource string
	// KeyID is the stored key that paid; empty for an environment key or
	// a keyless provider.
	KeyID        string
	InputTokens  int
	OutputTokens int
	// WebSearchCalls counts the web searches the call's provider tool made
	// (enable_web_search); each is billed on top of the tokens, in Cost.
	WebSearchCalls int
	// EmbeddingTokens are the input tokens of an embedding call (the
	// semantic ids' vectors); a chat call has none.
	EmbeddingTokens int
	// Cost is in micro-credits; a credit is one US dollar. It is the
	// whole call's, embeddings included.
	Cost int64
	// EmbeddingCost is the part of Cost that paid for embeddings.
	EmbeddingCost int64
	LatencyMS     int64
	Outcome       string
	CreatedAt     time.Time
}

// CostUSD is the cost in US dollars.
func (e Entry) CostUSD() float64 { return float64(e.Cost) / 1e6 }

// EmbeddingCostUSD is the embeddings' part of the cost in US dollars.
func (e Entry) EmbeddingCostUSD() float64 { return float64(e.EmbeddingCost) / 1e6 }
