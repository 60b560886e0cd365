-- Event data is written once per event and read back whole; nothing queries
-- inside it. json keeps the text as written (validated), where jsonb parsed
-- it into its binary form on every insert and printed it again on every
-- read: the larger part of PostgreSQL's work per event.
ALTER TABLE job_events ALTER COLUMN data TYPE json USING data::json;
