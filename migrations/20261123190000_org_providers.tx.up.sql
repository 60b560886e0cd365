-- Organizations' own OpenAI-compatible providers (issue 8). The key is
-- stored only sealed (Fernet), NULL for an endpoint that takes none; suffix
-- is its last 4 characters. models is the provider's model list (name, id,
-- optional context size and prices), read and written with the provider.
CREATE TABLE org_providers (
    id         text PRIMARY KEY,
    org_id     text NOT NULL,
    name       text NOT NULL,
    type       text NOT NULL,
    base_url   text NOT NULL,
    sealed     bytea,
    suffix     text NOT NULL DEFAULT '',
    version    integer NOT NULL DEFAULT 1,
    enabled    boolean NOT NULL,
    models     jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT org_providers_name_key UNIQUE (org_id, name)
);
