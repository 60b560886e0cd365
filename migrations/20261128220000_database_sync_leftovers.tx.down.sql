ALTER TABLE database_links DROP COLUMN shipped_hash;
ALTER TABLE databases DROP COLUMN snapshot_required_from;
