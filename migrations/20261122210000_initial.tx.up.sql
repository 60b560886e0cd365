-- The first schema: tenants, people, access keys, saved schemas, records, jobs
-- and the job event log. Ids are text made by the application. Every timestamp
-- is timestamptz, written in UTC. There are no foreign keys between the
-- tables yet: each repository is a separate port with its own contract suite,
-- and the application keeps the references consistent.
CREATE TABLE organizations (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);
--bun:split
CREATE TABLE users (
    id            text PRIMARY KEY,
    org_id        text NOT NULL,
    email         text NOT NULL,
    password_hash text NOT NULL,
    role          text NOT NULL,
    status        text NOT NULL,
    sys_admin     boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL
);
--bun:split
-- Emails are unique across the service, whatever their case.
CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email));
--bun:split
CREATE INDEX users_org_idx ON users (org_id, created_at, id);
--bun:split
CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    org_id       text NOT NULL,
    created_by   text,
    legacy       boolean NOT NULL DEFAULT false,
    name         text NOT NULL,
    -- NULL for legacy keys, which inherit their creator's role.
    role         text,
    scopes       text[] NOT NULL DEFAULT '{}',
    prefix       text NOT NULL,
    hash         text NOT NULL,
    expires_at   timestamptz,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    use_count    bigint NOT NULL DEFAULT 0
);
--bun:split
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);
--bun:split
CREATE INDEX api_keys_org_idx ON api_keys (org_id, created_at, id);
--bun:split
-- content is json, not jsonb: a schema document keeps the key order and the
-- text its author wrote (property order shows in prompts and in the UI).
CREATE TABLE schemas (
    id          text PRIMARY KEY,
    org_id      text NOT NULL,
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    content     json NOT NULL,
    linked      boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
--bun:split
CREATE INDEX schemas_org_page_idx ON schemas (org_id, created_at DESC, id DESC);
--bun:split
-- entity_data and structured_output are json for the same reason as
-- schemas.content: they come back in the order they were written.
CREATE TABLE records (
    id                text PRIMARY KEY,
    org_id            text NOT NULL,
    type              text NOT NULL,
    schema_id         text,
    job_id            text,
    model             text NOT NULL DEFAULT '',
    strategy          text NOT NULL DEFAULT '',
    entity_data       json,
    structured_output json,
    cost              bigint NOT NULL DEFAULT 0,
    input_tokens      integer NOT NULL DEFAULT 0,
    output_tokens     integer NOT NULL DEFAULT 0,
    sandbox           boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL
);
--bun:split
CREATE INDEX records_org_page_idx ON records (org_id, created_at DESC, id DESC);
--bun:split
CREATE INDEX records_org_schema_idx ON records (org_id, schema_id, created_at DESC, id DESC) WHERE schema_id IS NOT NULL;
--bun:split
CREATE INDEX records_org_job_idx ON records (org_id, job_id) WHERE job_id IS NOT NULL;
--bun:split
CREATE TABLE jobs (
    id           text PRIMARY KEY,
    org_id       text NOT NULL,
    type         text NOT NULL,
    state        text NOT NULL,
    error_code   text NOT NULL DEFAULT '',
    error        text NOT NULL DEFAULT '',
    request      jsonb,
    result       jsonb,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    CONSTRAINT jobs_state_check
        CHECK (state IN ('pending', 'running', 'paused', 'completed', 'failed', 'cancelled'))
);
--bun:split
CREATE INDEX jobs_org_idx ON jobs (org_id, created_at DESC, id DESC);
--bun:split
-- The reaper's query: live jobs by heartbeat.
CREATE INDEX jobs_live_heartbeat_idx ON jobs (heartbeat_at) WHERE state IN ('pending', 'running', 'paused');
--bun:split
CREATE TABLE job_events (
    job_id     text NOT NULL,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    data       jsonb,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, seq)
);
