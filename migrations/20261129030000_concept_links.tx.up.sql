-- A record's uses of semantic concepts (issue 30): the value at json_path
-- of the record's output resolved to concept_id. No foreign keys: a link
-- is written in a job's end, which must not fail because a concept was
-- deleted or merged meanwhile (DeleteLinks and RepointLinks keep them in
-- step).
CREATE TABLE concept_links (
    org_id     text NOT NULL,
    record_id  text NOT NULL,
    json_path  text NOT NULL,
    concept_id text NOT NULL,
    alias_id   text NOT NULL DEFAULT '',
    schema_id  text NOT NULL DEFAULT '',
    cosine     double precision,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (record_id, json_path)
);
--bun:split
-- LinksOf (newest first), UseOf, RepointLinks and DeleteLinks all start
-- from the concept.
CREATE INDEX concept_links_concept_idx ON concept_links (org_id, concept_id, created_at DESC, record_id);
--bun:split
-- The concepts an enrichment record resolved (SemanticConceptRef[]).
ALTER TABLE records ADD COLUMN semantic_concepts jsonb;
