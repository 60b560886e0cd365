-- Embedding-model migrations (issue 30): each organization's migrations,
-- with the durable progress a run that takes the migration's job over
-- resumes from (the cursor is the last concept id re-embedded in the first
-- type not yet cut over).
CREATE TABLE concept_migrations (
    id               text PRIMARY KEY,
    org_id           text NOT NULL,
    status           text NOT NULL,
    source_model     text NOT NULL,
    target_model     text NOT NULL,
    concept_types    text[] NOT NULL DEFAULT '{}',
    all_types        boolean NOT NULL DEFAULT false,
    cut_types        text[] NOT NULL DEFAULT '{}',
    cursor_id        text NOT NULL DEFAULT '',
    total_count      bigint NOT NULL DEFAULT 0,
    embedded_count   bigint NOT NULL DEFAULT 0,
    embedding_tokens bigint NOT NULL DEFAULT 0,
    started_at       timestamptz NOT NULL,
    completed_at     timestamptz,
    last_error       text NOT NULL DEFAULT ''
);
--bun:split
CREATE INDEX concept_migrations_org_idx ON concept_migrations (org_id, started_at, id);
--bun:split
-- One running migration per organization.
CREATE UNIQUE INDEX concept_migrations_running_idx ON concept_migrations (org_id) WHERE status = 'running';
