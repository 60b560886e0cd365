DROP INDEX IF EXISTS llm_usage_key_idx;
--bun:split
DROP INDEX IF EXISTS llm_usage_created_idx;
--bun:split
ALTER TABLE llm_usage DROP COLUMN IF EXISTS task;
