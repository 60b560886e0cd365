DROP TRIGGER IF EXISTS concept_embeddings_bytes ON concept_embeddings;
--bun:split
DROP FUNCTION IF EXISTS concept_embeddings_bytes();
--bun:split
DROP FUNCTION IF EXISTS concept_vector_bytes(real[]);
--bun:split
ALTER TABLE concept_embeddings DROP COLUMN IF EXISTS vector_bytes;
