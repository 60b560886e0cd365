-- Jobs become durable work: a worker claims a job with a lease and a fencing
-- token (attempt); only the holder of the current attempt writes the job's
-- events, record and state. River (river_* tables, migrated beside these)
-- queues the runs.
ALTER TABLE jobs ADD COLUMN attempt integer NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE jobs ADD COLUMN owner text NOT NULL DEFAULT '';
--bun:split
ALTER TABLE jobs ADD COLUMN lease_until timestamptz;
--bun:split
DROP INDEX IF EXISTS jobs_live_heartbeat_idx;
--bun:split
-- The sweep's query: live, held jobs by lease end.
CREATE INDEX jobs_lapsed_idx ON jobs (lease_until) WHERE state IN ('pending', 'running', 'paused') AND owner <> '';
