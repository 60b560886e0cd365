-- Database sync leftovers (issue 28). snapshot_required_from is the feed's
-- head when a schema was linked again to a registration that had already
-- shipped (0: no snapshot required): rows written while the schema was not
-- linked exist only in the snapshot, so claims deliver nothing until a
-- snapshot as of at least that head is served. shipped_hash is the content
-- hash of the published contract the link's shipped projection follows.
ALTER TABLE databases ADD COLUMN snapshot_required_from bigint NOT NULL DEFAULT 0;
ALTER TABLE database_links ADD COLUMN shipped_hash text NOT NULL DEFAULT '';
-- Links that shipped before this column follow their schema's published
-- contract: every publish ships to every link in its own transaction.
UPDATE database_links l SET shipped_hash = s.published_hash
FROM schemas s WHERE s.id = l.schema_id AND l.shipped IS NOT NULL;
