package ports

import (
	"context"
	"time"
)

// SliceConcept is a concept as a migration reads it: its id and the
// canonical text its embedding is made from.
type SliceConcept struct {
	ID            string
	CanonicalText string
}

// The states of an embedding-model migration (REFERENCE.md §7).
const (
	MigrationRunning   = "running"
	MigrationCompleted = "completed"
	MigrationFailed    = "failed"
	MigrationCancelled = "cancelled"
)

// ConceptMigration is an organization's embedding-model migration and its
// durable progress: a run that takes the migration's job over resumes from
// it. ID is the migration's job id.
type ConceptMigration struct {
	ID          string
	OrgID       string
	Status      string
	SourceModel string
	TargetModel string
	// ConceptTypes are the slices to move, in the order they are moved;
	// AllTypes says the request named none (every type of the source model),
	// so the organization's setting may move once they are cut over.
	ConceptTypes []string
	AllTypes     bool
	// CutTypes are the types already cut over to the target model.
	CutTypes []string
	// Cursor is the last concept id re-embedded in the first type not yet
	// cut over ("" before its first page).
	Cursor          string
	TotalCount      int
	EmbeddedCount   int
	EmbeddingTokens int
	StartedAt       time.Time
	CompletedAt     *time.Time
	LastError       string
}

// ConceptMigrations keeps the organizations' embedding-model migrations.
type ConceptMigrations interface {
	// StartMigration stores m, running; ErrConflict when the organization
	// has a running migration already.
	StartMigration(ctx context.Context, m ConceptMigration) error
	// LatestMigration is the organization's most recent migration
	// (ErrNotFound when none ever ran).
	LatestMigration(ctx context.Context, orgID string) (*ConceptMigration, error)
	// GetMigration returns the organization's migration id.
	GetMigration(ctx context.Context, orgID, id string) (*ConceptMigration, error)
	// SaveMigration writes m's progress and status over the stored one,
	// only while that one is running and has embedded no more than m
	// (ErrConflict otherwise): a late write of a run that lost the job
	// never takes progress back, nor revives an ended migration.
	SaveMigration(ctx context.Context, m ConceptMigration) error
}
