ALTER TABLE records DROP COLUMN web_search_calls;
