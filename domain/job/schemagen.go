package job

// Types of the schema jobs: generation from samples and AI edit. Their
// job_type on the wire is the type itself.
const (
	TypeSchemaGeneration Type = "schema_generation"
	TypeSchemaEdit       Type = "schema_edit"
)
