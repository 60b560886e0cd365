-- Records are soft-deleted by default (POST /api/records/batch-delete):
-- deleted_at is set, and readers skip the record unless a listing asks for
-- soft-deleted ones.
ALTER TABLE records ADD COLUMN deleted_at timestamptz;
