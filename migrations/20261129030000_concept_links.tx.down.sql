ALTER TABLE records DROP COLUMN IF EXISTS semantic_concepts;
--bun:split
DROP TABLE IF EXISTS concept_links;
