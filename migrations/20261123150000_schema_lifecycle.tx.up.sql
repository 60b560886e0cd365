-- Saved-schema lifecycle: tags and pin, the content hash (deduplication and
-- publish state), the published contract of a linked schema, its key
-- language lock, and the trash (soft delete).
ALTER TABLE schemas
    ADD COLUMN content_hash      text NOT NULL DEFAULT '',
    ADD COLUMN tags              json NOT NULL DEFAULT '[]',
    ADD COLUMN is_pinned         boolean NOT NULL DEFAULT false,
    ADD COLUMN published_content json,
    ADD COLUMN published_hash    text NOT NULL DEFAULT '',
    ADD COLUMN published_at      timestamptz,
    ADD COLUMN key_language      text NOT NULL DEFAULT '',
    ADD COLUMN deleted_at        timestamptz;
--bun:split
-- Documents are stored compacted, as written, so the hash of their text is
-- schema.ContentHash.
UPDATE schemas SET content_hash = encode(sha256(convert_to(content::text, 'UTF8')), 'hex');
--bun:split
DROP INDEX IF EXISTS schemas_org_page_idx;
--bun:split
-- The list: live schemas, pinned first, then most recently updated.
CREATE INDEX schemas_org_list_idx ON schemas (org_id, is_pinned DESC, updated_at DESC, id DESC) WHERE deleted_at IS NULL;
--bun:split
CREATE INDEX schemas_org_hash_idx ON schemas (org_id, content_hash) WHERE deleted_at IS NULL;
--bun:split
CREATE INDEX schemas_org_trash_idx ON schemas (org_id, deleted_at DESC, id DESC) WHERE deleted_at IS NOT NULL;
