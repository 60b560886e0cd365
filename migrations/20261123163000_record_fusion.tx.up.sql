-- A fused record (type fusion) keeps its provenance, sources, fusion summary
-- and conflict report in one JSON document; other records leave it null.
ALTER TABLE records ADD COLUMN fusion jsonb;
