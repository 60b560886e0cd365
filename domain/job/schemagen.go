package job

// Types of the schema jobs: generation from samples and AI edit. Their
// job_type on the wire is the type itself.
const (
	TypeSchemaGeneration Type = "schema_generation"
	TypeSchemaEdit       Type = "schema_edit"
)

// SchemaModelStarted opens the model's run of a schema job: model_started
// without enrichment's strategy and expertise counts.
type SchemaModelStarted struct {
	Model   string
	Sandbox bool
}

func (SchemaModelStarted) EventType() EventType { return EventModelStarted }
func (p SchemaModelStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "sandbox": p.Sandbox}
}
