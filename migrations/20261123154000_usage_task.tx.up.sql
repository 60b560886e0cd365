-- What each LLM call was for (the job's type), so that cost analytics can
-- be narrowed to a task; and an index for totals across organizations
-- (system administrators) and per stored key.
ALTER TABLE llm_usage ADD COLUMN task text NOT NULL DEFAULT '';
--bun:split
CREATE INDEX llm_usage_created_idx ON llm_usage (created_at);
--bun:split
CREATE INDEX llm_usage_key_idx ON llm_usage (org_id, key_id) WHERE key_id <> '';
