DROP INDEX IF EXISTS schemas_org_trash_idx;
--bun:split
DROP INDEX IF EXISTS schemas_org_hash_idx;
--bun:split
DROP INDEX IF EXISTS schemas_org_list_idx;
--bun:split
CREATE INDEX schemas_org_page_idx ON schemas (org_id, created_at DESC, id DESC);
--bun:split
ALTER TABLE schemas
    DROP COLUMN content_hash,
    DROP COLUMN tags,
    DROP COLUMN is_pinned,
    DROP COLUMN published_content,
    DROP COLUMN published_hash,
    DROP COLUMN published_at,
    DROP COLUMN key_language,
    DROP COLUMN deleted_at;
