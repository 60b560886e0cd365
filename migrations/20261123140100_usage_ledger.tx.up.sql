-- The LLM call ledger: one row per call, appended with the job's terminal
-- state and never changed. cost is in micro-credits (one credit is one US
-- dollar).
CREATE TABLE llm_usage (
    id            text PRIMARY KEY,
    org_id        text NOT NULL,
    job_id        text NOT NULL,
    model         text NOT NULL,
    key_source    text NOT NULL DEFAULT '',
    key_id        text NOT NULL DEFAULT '',
    input_tokens  integer NOT NULL,
    output_tokens integer NOT NULL,
    cost          bigint NOT NULL,
    latency_ms    bigint NOT NULL,
    outcome       text NOT NULL,
    created_at    timestamptz NOT NULL
);
--bun:split
CREATE INDEX llm_usage_org_idx ON llm_usage (org_id, created_at, id);
