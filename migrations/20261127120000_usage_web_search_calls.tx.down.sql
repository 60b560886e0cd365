ALTER TABLE llm_usage DROP COLUMN web_search_calls;
