-- The web searches each LLM call's provider tool made (enable_web_search),
-- billed on top of the tokens: billing charges from this ledger. Calls
-- stored before it, and those that did not search, have 0.
ALTER TABLE llm_usage ADD COLUMN web_search_calls integer NOT NULL DEFAULT 0;
