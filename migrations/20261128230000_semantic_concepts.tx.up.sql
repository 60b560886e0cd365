-- The semantic concept vocabulary (issue 30). A concept belongs to one
-- organization and one type; its canonical text is also one of its
-- aliases (is_canonical), so exact matching reads concept_aliases only.
-- embedding_model and dims name the slice the concept is compared in.
CREATE TABLE semantic_concepts (
    id              text PRIMARY KEY,
    org_id          text NOT NULL,
    concept_type    text NOT NULL,
    canonical_text  text NOT NULL,
    normalized_text text NOT NULL,
    ref_count       bigint NOT NULL DEFAULT 0,
    embedding_model text NOT NULL DEFAULT '',
    dims            integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL
);
--bun:split
CREATE INDEX semantic_concepts_org_created_idx ON semantic_concepts (org_id, created_at, id);
--bun:split
CREATE INDEX semantic_concepts_org_type_idx ON semantic_concepts (org_id, concept_type, embedding_model);
--bun:split
-- A normalized text names one alias among an organization's concepts of
-- one type: the unique index is what makes exact matching unambiguous.
-- concept_type is copied from the concept (it never changes) so that the
-- index can hold it.
CREATE TABLE concept_aliases (
    id              text PRIMARY KEY,
    org_id          text NOT NULL,
    concept_id      text NOT NULL REFERENCES semantic_concepts (id) ON DELETE CASCADE,
    concept_type    text NOT NULL,
    text            text NOT NULL,
    normalized_text text NOT NULL,
    is_canonical    boolean NOT NULL DEFAULT false,
    ref_count       bigint NOT NULL DEFAULT 0,
    origin          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL
);
--bun:split
CREATE UNIQUE INDEX concept_aliases_text_idx ON concept_aliases (org_id, concept_type, normalized_text);
--bun:split
CREATE UNIQUE INDEX concept_aliases_canonical_idx ON concept_aliases (concept_id) WHERE is_canonical;
--bun:split
CREATE INDEX concept_aliases_concept_idx ON concept_aliases (concept_id, created_at, id);
--bun:split
-- One vector per concept and embedding model, so that a migration to
-- another model writes beside the vectors lookups still read. This is the
-- exact index: a lookup reads its slice's vectors page by page, in
-- primary key order, and ranks them.
CREATE TABLE concept_embeddings (
    org_id          text NOT NULL,
    concept_type    text NOT NULL,
    embedding_model text NOT NULL,
    concept_id      text NOT NULL REFERENCES semantic_concepts (id) ON DELETE CASCADE,
    dims            integer NOT NULL,
    vector          real[] NOT NULL,
    PRIMARY KEY (org_id, concept_type, embedding_model, concept_id)
);
--bun:split
CREATE INDEX concept_embeddings_concept_idx ON concept_embeddings (concept_id);
