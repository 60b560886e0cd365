-- Attachments (issue 29): each organization's files, deduplicated on
-- their sha256. The bytes are in a blob store (attachment_blobs by
-- default, or object storage with ENRICH_BLOB_URL); this is the metadata.
CREATE TABLE attachments (
    id                  text PRIMARY KEY,
    org_id              text NOT NULL,
    filename            text NOT NULL,
    media_type          text NOT NULL,
    size_bytes          bigint NOT NULL,
    sha256              text NOT NULL,
    mode                text NOT NULL,
    extraction_kind     text NOT NULL,
    requires_capability text NOT NULL DEFAULT '',
    extracted_text      text NOT NULL DEFAULT '',
    blob_key            text NOT NULL,
    created_at          timestamptz NOT NULL
);
--bun:split
CREATE UNIQUE INDEX attachments_org_sha_idx ON attachments (org_id, sha256);
--bun:split
CREATE INDEX attachments_org_created_idx ON attachments (org_id, created_at DESC, id DESC);
--bun:split
-- The administrator's policies over the built-in defaults, one per media
-- type changed.
CREATE TABLE attachment_policies (
    media_type text PRIMARY KEY,
    label      text NOT NULL,
    mode       text NOT NULL,
    enabled    boolean NOT NULL,
    capability text NOT NULL DEFAULT '',
    extract    boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now()
);
--bun:split
-- The bytes of the PostgreSQL blob store, in chunks so that a write
-- streams and a read never holds a whole file. gen tells one write's
-- chunks from another's, so that a read that spans an overwrite or a
-- delete fails rather than mixing versions. An empty blob is one empty
-- chunk.
CREATE TABLE attachment_blobs (
    key   text NOT NULL,
    seq   integer NOT NULL,
    gen   bigint NOT NULL,
    data  bytea NOT NULL,
    PRIMARY KEY (key, seq)
);
