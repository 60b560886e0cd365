package enrichment

import (
	"encoding/json"
	"time"
)

// RecordType names what produced a record.
type RecordType string

const (
	RecordEnrichment RecordType = "enrichment"
	// RecordSchemaGeneration and RecordSchemaEdit are made by schema
	// generation and AI edit jobs (structured_output is the schema).
	RecordSchemaGeneration RecordType = "schema_generation"
	RecordSchemaEdit       RecordType = "schema_edit"
	RecordPlayground       RecordType = "playground"
	// RecordAmbiguityAnalysis is an ambiguity analysis (of a sample or a
	// saved schema): its structured output is the report.
	RecordAmbiguityAnalysis RecordType = "ambiguity_analysis"
)

// RecordTypes lists every record type a listing may filter by.
func RecordTypes() []RecordType {
	return []RecordType{RecordEnrichment, RecordSchemaGeneration, RecordSchemaEdit, RecordPlayground, RecordAmbiguityAnalysis, RecordFusion}
}

// Record is a stored enrichment result.
type Record struct {
	ID               string
	OrgID            string
	Type             RecordType
	SchemaID         string
	JobID            string
	Model            string
	Strategy         Strategy
	EntityData       json.RawMessage
	StructuredOutput json.RawMessage
	// Cost is in micro-credits.
	Cost         int64
	InputTokens  int
	OutputTokens int
	// WebSearchCalls counts the provider's web-search tool calls across
	// the record's prompts (each is billed on top of the tokens).
	WebSearchCalls int
	// Sandbox marks records produced by the built-in sandbox provider.
	Sandbox   bool
	CreatedAt time.Time
	// DeletedAt is set on a soft-deleted record, which readers no longer
	// see (a listing may ask for it).
	DeletedAt *time.Time
	// Fusion is set on fused records (type fusion) only.
	Fusion *Fusion
	// Attachments are the documents the record's run read (attachment_ids).
	Attachments []AttachmentRef
	// SemanticConcepts are the concepts the record's semantic_id
	// properties resolved to, one per object that carries one.
	SemanticConcepts []SemanticConceptRef
	// SemanticUnresolved are the objects whose semantic_id property could
	// not be resolved (the property is left null).
	SemanticUnresolved []SemanticUnresolved
}

// SemanticUnresolved is one object of a record's output whose semantic_id
// property could not be resolved: where, in which concept type, the
// identity text, and why (one of the Unresolved* codes).
type SemanticUnresolved struct {
	JSONPath    string
	ConceptType string
	Text        string
	Reason      string
}

// Why a semantic_id property was left unresolved.
const (
	UnresolvedNoKey   = "no_usable_key"
	UnresolvedStorage = "storage_unavailable"
	UnresolvedFailed  = "failed"
)

// SemanticConceptRef is one object of a record's output whose semantic_id
// property was resolved: the concept, as it was then, and the path of the
// property in the output.
type SemanticConceptRef struct {
	ConceptID string
	// AliasID is the alias the text resolved through ("" for an id the
	// input carried); it is not shown.
	AliasID       string
	ConceptType   string
	CanonicalText string
	// Cosine is the similarity that decided a match; nil for an exact
	// hit, a mint or an id the input carried.
	Cosine   *float64
	JSONPath string
}

// AttachmentRef is one attachment a record's run read, as it was then: the
// record keeps it when the attachment is later deleted.
type AttachmentRef struct {
	ID        string
	Filename  string
	MediaType string
	SizeBytes int64
	SHA256    string
	// Mode is binary or inline_text; Kind binary, inline_text or extracted;
	// Capability what a model needs for the raw bytes ("" when none).
	Mode, Kind, Capability string
}
