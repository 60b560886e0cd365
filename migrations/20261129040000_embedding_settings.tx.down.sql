ALTER TABLE llm_usage DROP COLUMN IF EXISTS embedding_cost;
--bun:split
ALTER TABLE llm_usage DROP COLUMN IF EXISTS embedding_tokens;
--bun:split
DROP TABLE IF EXISTS org_embedding_settings;
