DROP TABLE IF EXISTS concept_embeddings;
--bun:split
DROP TABLE IF EXISTS concept_aliases;
--bun:split
DROP TABLE IF EXISTS semantic_concepts;
