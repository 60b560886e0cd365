package job

// TypeConceptMigration moves an organization's semantic concepts to
// another embedding model, slice by slice (issue 30).
const TypeConceptMigration Type = "concept_migration"
