DROP FUNCTION IF EXISTS enrich_require_held(bigint, text);
