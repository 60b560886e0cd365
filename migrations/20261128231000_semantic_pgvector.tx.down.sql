-- The extension stays: other objects may use it.
DROP TRIGGER IF EXISTS concept_embeddings_sync ON concept_embeddings;
--bun:split
DROP FUNCTION IF EXISTS concept_embeddings_sync();
--bun:split
DROP INDEX IF EXISTS concept_embeddings_hnsw_384;
--bun:split
ALTER TABLE concept_embeddings DROP COLUMN IF EXISTS embedding;
