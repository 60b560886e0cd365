ALTER TABLE records DROP COLUMN fusion;
