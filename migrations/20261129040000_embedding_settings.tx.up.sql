-- Each organization's embedding-model setting (issue 30). No row: the
-- organization never chose one and the server's default applies; a row
-- with a NULL embedding_model: the organization cleared it (semantic ids
-- off).
CREATE TABLE org_embedding_settings (
    org_id          text PRIMARY KEY,
    embedding_model text,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
--bun:split
-- The ledger's embedding calls: the tokens an embedding call cost and the
-- part of cost that pays for them (micro-credits).
ALTER TABLE llm_usage ADD COLUMN embedding_tokens integer NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE llm_usage ADD COLUMN embedding_cost bigint NOT NULL DEFAULT 0;
