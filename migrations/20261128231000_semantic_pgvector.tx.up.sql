-- pgvector where the server has it (issue 30); elsewhere this migration
-- does nothing and the exact index (concept_embeddings.vector, real[])
-- is what runs. concept_embeddings.vector stays the one written column:
-- a trigger derives embedding from it, so every writer works on both
-- servers and the exact index can always be used.
--
-- HNSW needs a fixed number of dimensions, so the index is a partial one
-- on embedding::vector(384), the built-in embedder's size; a slice of
-- another size is searched exactly by pgvector's operator until an index
-- for its size is added the same way.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
        RETURN;
    END IF;
    CREATE EXTENSION IF NOT EXISTS vector;
    ALTER TABLE concept_embeddings ADD COLUMN embedding vector;
    UPDATE concept_embeddings SET embedding = vector::vector;
    CREATE FUNCTION concept_embeddings_sync() RETURNS trigger LANGUAGE plpgsql AS $f$
    BEGIN
        NEW.embedding := NEW.vector::vector;
        RETURN NEW;
    END
    $f$;
    CREATE TRIGGER concept_embeddings_sync BEFORE INSERT OR UPDATE OF vector ON concept_embeddings
        FOR EACH ROW EXECUTE FUNCTION concept_embeddings_sync();
    CREATE INDEX concept_embeddings_hnsw_384 ON concept_embeddings
        USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dims = 384;
END
$$;
