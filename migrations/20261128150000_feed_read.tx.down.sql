DROP INDEX IF EXISTS deltas_quarantined_idx;
--bun:split
DROP INDEX IF EXISTS deltas_entity_idx;
--bun:split
ALTER TABLE delta_feeds DROP COLUMN IF EXISTS watermark_at;
--bun:split
ALTER TABLE delta_feeds DROP COLUMN IF EXISTS state_version;
