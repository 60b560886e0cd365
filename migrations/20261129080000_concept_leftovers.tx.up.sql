-- The operator's quotas count embedding tokens too (issue 30): the quota
-- index includes them, so that the count stays an index-only scan.
DROP INDEX IF EXISTS llm_usage_quota_idx;
--bun:split
CREATE INDEX llm_usage_quota_idx ON llm_usage (org_id, key_source, created_at) INCLUDE (input_tokens, output_tokens, embedding_tokens);
--bun:split
-- The semantic_id properties a record could not resolve (this project's
-- addition: the record detail's semantic_unresolved).
ALTER TABLE records ADD COLUMN semantic_unresolved jsonb;
