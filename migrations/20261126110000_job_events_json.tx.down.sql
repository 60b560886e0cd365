ALTER TABLE job_events ALTER COLUMN data TYPE jsonb USING data::jsonb;
