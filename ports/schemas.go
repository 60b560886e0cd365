package ports

import "context"

// SchemaUser is something that uses saved schemas besides a database link
// (which the schema itself records): benchmarks, when they come. Deleting a
// schema something uses is refused unless the caller cascades, which
// releases every use first.
type SchemaUser interface {
	// SchemaUses describes, in words, what of this user uses the schema
	// ("benchmark Q3"); none when nothing does.
	SchemaUses(ctx context.Context, orgID, schemaID string) ([]string, error)
	// ReleaseSchema drops every use of the schema (delete with cascade).
	ReleaseSchema(ctx context.Context, orgID, schemaID string) error
}
