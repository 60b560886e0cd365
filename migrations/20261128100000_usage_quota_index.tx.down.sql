DROP INDEX IF EXISTS llm_usage_quota_idx;
