DROP INDEX IF EXISTS llm_usage_quota_idx;
--bun:split
CREATE INDEX llm_usage_quota_idx ON llm_usage (org_id, key_source, created_at) INCLUDE (input_tokens, output_tokens);
--bun:split
ALTER TABLE records DROP COLUMN IF EXISTS semantic_unresolved;
