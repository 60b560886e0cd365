DROP TABLE IF EXISTS entity_revisions;
--bun:split
DROP TABLE IF EXISTS entities;
--bun:split
DROP TABLE IF EXISTS deltas;
--bun:split
DROP TABLE IF EXISTS delta_feeds;
--bun:split
DROP TABLE IF EXISTS database_links;
--bun:split
DROP TABLE IF EXISTS databases;
