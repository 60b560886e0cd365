-- A paused job's pause deadline (the sweep cancels it past it), and how many
-- pauses were continued (a continue's new holder is not an interruption).
ALTER TABLE jobs ADD COLUMN pause_until timestamptz;
ALTER TABLE jobs ADD COLUMN continues integer NOT NULL DEFAULT 0;
CREATE INDEX jobs_pause_idx ON jobs (pause_until) WHERE state = 'paused';
