package sandbox

import "github.com/entityenrich/enrich/ports"

// TaskInput is what a task's answer may depend on: the conversation's text,
// the JSON Schema the answer must satisfy (nil when none was sent), the
// model's name as a seed, and whether the model already answered once in
// this conversation (a retry after a validation failure).
type TaskInput struct {
	Prompt string
	Schema map[string]any
	Seed   string
	Retry  bool
	// Docs are the call's attachments, as the sandbox read them.
	Docs []Document
}

// taskFunc answers one kind of call deterministically: the same input gives
// the same answer.
type taskFunc func(in TaskInput) any

// tasks maps a call's task (ports.LLMTask, sent as MetadataTask) to its
// answer. Enrichment, the empty task, is not here: Generate answers it.
var tasks = map[string]taskFunc{
	string(ports.TaskAmbiguity):           ambiguityAnswer,
	"sample_generation":                   samples,
	"schema_generation":                   generateSchema, // schemagen.go
	"schema_edit":                         editSchema,     // schemagen.go
	string(ports.TaskArbitration):         arbitrate,      // contrarian.go
	string(ports.TaskClassification):      classify,       // classify.go
	string(ports.TaskAttachmentCoherence): coherence,      // coherence.go
}
