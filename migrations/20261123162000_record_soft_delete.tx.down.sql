ALTER TABLE records DROP COLUMN deleted_at;
