-- Refresh tokens of user sessions; only a token's hash is stored. Tokens of
-- one login share a family_id.
CREATE TABLE refresh_tokens (
    id         text PRIMARY KEY,
    family_id  text NOT NULL,
    user_id    text NOT NULL,
    org_id     text NOT NULL,
    hash       text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    revoked_at timestamptz
);
--bun:split
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
--bun:split
CREATE INDEX refresh_tokens_user_idx ON refresh_tokens (user_id);
