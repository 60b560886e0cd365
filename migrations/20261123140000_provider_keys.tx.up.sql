-- LLM provider keys: organizations' own (org_id set) and global ones
-- (org_id NULL, kept by system administrators). The secret is stored only
-- sealed (Fernet); suffix is its last 4 characters, the part shown.
CREATE TABLE provider_keys (
    id           text PRIMARY KEY,
    org_id       text,
    provider     text NOT NULL,
    name         text NOT NULL,
    suffix       text NOT NULL,
    sealed       bytea NOT NULL,
    version      integer NOT NULL DEFAULT 0,
    enabled      boolean NOT NULL,
    health       text NOT NULL,
    checked_at   timestamptz,
    expires_at   timestamptz,
    rest_until   timestamptz,
    last_used_at timestamptz,
    uses         bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL
);
--bun:split
-- A pick reads one provider's keys of one organization plus the global ones.
CREATE INDEX provider_keys_pick_idx ON provider_keys (provider, org_id);
--bun:split
CREATE INDEX provider_keys_org_idx ON provider_keys (org_id, provider, created_at, id);
