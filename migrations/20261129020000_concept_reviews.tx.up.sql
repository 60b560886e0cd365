-- The review list of the semantic concept vocabulary (issue 30): pairs of
-- concepts the ladder could not tell apart, left to a person. A pair is
-- kept once per organization whichever order its concepts come in:
-- lo_id and hi_id are its two ids sorted, and the unique index keeps the
-- first filing. There is no foreign key to semantic_concepts: a filing
-- racing a delete must not fail the resolution that filed it; deletes and
-- merges drop the pairs naming their concepts.
CREATE TABLE concept_reviews (
    id              text PRIMARY KEY,
    org_id          text NOT NULL,
    concept_type    text NOT NULL,
    embedding_model text NOT NULL DEFAULT '',
    a_id            text NOT NULL,
    b_id            text NOT NULL,
    lo_id           text NOT NULL,
    hi_id           text NOT NULL,
    similarity      double precision NOT NULL,
    reason          text NOT NULL,
    detail          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL
);
--bun:split
CREATE UNIQUE INDEX concept_reviews_pair_idx ON concept_reviews (org_id, lo_id, hi_id);
--bun:split
CREATE INDEX concept_reviews_hi_idx ON concept_reviews (org_id, hi_id);
--bun:split
CREATE INDEX concept_reviews_org_sim_idx ON concept_reviews (org_id, similarity DESC, id);
