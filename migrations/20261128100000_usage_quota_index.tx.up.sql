-- The operator's quotas (ENRICH_QUOTA_CALLS_PER_DAY, _TOKENS_PER_DAY) count
-- an organization's calls through the operator's keys today before every
-- spend: one aggregate over (org_id, key_source, created_at), answered from
-- this index alone (the tokens are included).
CREATE INDEX llm_usage_quota_idx ON llm_usage (org_id, key_source, created_at) INCLUDE (input_tokens, output_tokens);
