-- Database sync (issue 28): registrations, their links to schemas, each
-- registration's feed (its state row and its deltas) and the entity layer.
CREATE TABLE databases (
    id                      text PRIMARY KEY,
    org_id                  text NOT NULL,
    name                    text NOT NULL,
    dialect                 text NOT NULL DEFAULT 'postgres',
    page_limit              integer NOT NULL,
    purge_on_ack            boolean NOT NULL DEFAULT false,
    purge_entity_state      boolean NOT NULL DEFAULT false,
    on_gaps                 text NOT NULL,
    pk_strategy             text NOT NULL,
    index_scalars           text NOT NULL,
    notify_debounce_s       integer NOT NULL,
    max_threshold_timeout_s integer NOT NULL,
    key_language            text NOT NULL DEFAULT '',
    propagate_not_null      boolean NOT NULL DEFAULT false,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL
);
--bun:split
CREATE INDEX databases_org_idx ON databases (org_id, created_at, id);
--bun:split
-- A schema linked to a registration. shipped is the relational projection
-- the consumer has (names kept across publishes); NULL before the first
-- DDL delta or snapshot.
CREATE TABLE database_links (
    database_id        text NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    schema_id          text NOT NULL,
    org_id             text NOT NULL,
    linked_at          timestamptz NOT NULL,
    enrichment_enabled boolean NOT NULL DEFAULT true,
    webhook_url        text NOT NULL DEFAULT '',
    webhook_secret     text NOT NULL DEFAULT '',
    shipped            jsonb,
    PRIMARY KEY (database_id, schema_id)
);
--bun:split
CREATE INDEX database_links_schema_idx ON database_links (schema_id);
--bun:split
-- One row per registration: the feed's state (domain/delta.State), saved by
-- compare-and-set on claims, and the next delta id. A writer hands out ids
-- with UPDATE ... SET next_id = next_id + n RETURNING, which locks the row
-- until its commit, so ids are contiguous and visible in commit order.
CREATE TABLE delta_feeds (
    database_id      text PRIMARY KEY REFERENCES databases (id) ON DELETE CASCADE,
    next_id          bigint NOT NULL DEFAULT 1,
    watermark        bigint NOT NULL DEFAULT 0,
    delivered        bigint NOT NULL DEFAULT 0,
    lease_up_to      bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    lease_token      bigint NOT NULL DEFAULT 0,
    claims           bigint NOT NULL DEFAULT 0,
    quarantined      text[] NOT NULL DEFAULT '{}'
);
--bun:split
CREATE TABLE deltas (
    database_id    text NOT NULL REFERENCES databases (id) ON DELETE CASCADE,
    id             bigint NOT NULL,
    kind           text NOT NULL,
    op             text NOT NULL,
    sql            text NOT NULL,
    payload        jsonb NOT NULL DEFAULT '{}',
    batch_id       text NOT NULL DEFAULT '',
    revision       bigint NOT NULL DEFAULT 0,
    entity_type    text NOT NULL DEFAULT '',
    entity_id      text NOT NULL DEFAULT '',
    schema_id      text NOT NULL DEFAULT '',
    record_id      text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    acked_at       timestamptz,
    quarantined_at timestamptz,
    apply_error    text NOT NULL DEFAULT '',
    apply_error_at timestamptz,
    PRIMARY KEY (database_id, id)
);
--bun:split
CREATE INDEX deltas_batch_idx ON deltas (database_id, batch_id) WHERE batch_id <> '';
--bun:split
-- The entity layer: one row per (schema, entity type, key identity).
CREATE TABLE entities (
    id             text PRIMARY KEY,
    org_id         text NOT NULL,
    schema_id      text NOT NULL,
    entity_type    text NOT NULL,
    key_identity   text NOT NULL,
    keys           jsonb NOT NULL DEFAULT '{}',
    semantic_id    text NOT NULL DEFAULT '',
    payload        jsonb NOT NULL,
    revision       bigint NOT NULL,
    last_record_id text NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL,
    UNIQUE (schema_id, entity_type, key_identity)
);
--bun:split
CREATE INDEX entities_org_schema_idx ON entities (org_id, schema_id, entity_type, updated_at DESC, id);
--bun:split
-- The last revision each identity reached: kept when the entity row is
-- purged, so a re-created entity's revisions keep rising and a consumer's
-- guard (ee_revision <) never drops its upsert.
CREATE TABLE entity_revisions (
    schema_id    text NOT NULL,
    entity_type  text NOT NULL,
    key_identity text NOT NULL,
    revision     bigint NOT NULL,
    PRIMARY KEY (schema_id, entity_type, key_identity)
);
