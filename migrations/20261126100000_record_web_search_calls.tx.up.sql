-- The web-search tool calls a record's prompts made (each billed on top of
-- the tokens); records stored before it, and those without searches, have 0.
ALTER TABLE records ADD COLUMN web_search_calls integer NOT NULL DEFAULT 0;
