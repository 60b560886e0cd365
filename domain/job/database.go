package job

// The entity layer's events (WIRE.md §6.3): after a record's results and
// before completed (entity_completed in a batch), what the schema's linked
// databases made of it.
const (
	EventDatabaseSaved    EventType = "database_saved"
	EventDatabaseRejected EventType = "database_rejected"
)

// DatabaseOutcome is a database_saved (or, Rejected, database_rejected)
// event: the record and its DatabaseSyncOutcome.
type DatabaseOutcome struct {
	RecordID string
	// Database is the DatabaseSyncOutcome as its JSON object.
	Database map[string]any
	Rejected bool
	// EntityIndex is the entity's index in a batch (nil: not a batch).
	EntityIndex *int
}

func (d DatabaseOutcome) EventType() EventType {
	if d.Rejected {
		return EventDatabaseRejected
	}
	return EventDatabaseSaved
}
