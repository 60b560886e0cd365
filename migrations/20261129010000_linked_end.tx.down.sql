DROP FUNCTION IF EXISTS enrich_require_feeds(bigint);
--bun:split
ALTER TABLE deltas DROP COLUMN draft;
