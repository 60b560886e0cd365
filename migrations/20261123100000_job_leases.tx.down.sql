DROP INDEX IF EXISTS jobs_lapsed_idx;
--bun:split
CREATE INDEX jobs_live_heartbeat_idx ON jobs (heartbeat_at) WHERE state IN ('pending', 'running', 'paused');
--bun:split
ALTER TABLE jobs DROP COLUMN lease_until;
--bun:split
ALTER TABLE jobs DROP COLUMN owner;
--bun:split
ALTER TABLE jobs DROP COLUMN attempt;
