-- The feed's read side (issue 28). state_version is the compare-and-set
-- token of a registration's feed state: every write of the state (claim,
-- ack, report, release) moves it, and a writer that loaded an older
-- version writes nothing and reloads. watermark_at is when the watermark
-- last moved (the summary's ack_watermark_at).
ALTER TABLE delta_feeds ADD COLUMN state_version bigint NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE delta_feeds ADD COLUMN watermark_at timestamptz;
--bun:split
-- An entity's latest delta in each registration's feed (the
-- purge_entity_state rule).
CREATE INDEX deltas_entity_idx ON deltas (database_id, entity_id, id) WHERE entity_id <> '';
--bun:split
-- The quarantine listing and its actions.
CREATE INDEX deltas_quarantined_idx ON deltas (database_id, id) WHERE quarantined_at IS NOT NULL;
