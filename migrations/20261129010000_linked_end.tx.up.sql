-- A linked job's end stores its entity rows and data deltas in the end's
-- one round trip: the statement that moves an identity's revision also
-- writes the entity and its deltas, so the revision is not known when the
-- delta's SQL is rendered. Such a delta keeps its SQL as draft (the
-- statements' structured parts, relmap.Draft) and sql = ''; the feed's
-- readers render the SQL from draft at the row's revision. The payload is
-- stored complete.
ALTER TABLE deltas ADD COLUMN draft jsonb;
--bun:split
-- The end renders its deltas against the registrations it read before
-- (cached); this raises EJ412 when the feeding links are not those any
-- more, which rolls the end back: it is then stored the slow way (the
-- links read under lock first).
CREATE FUNCTION enrich_require_feeds(n bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF n <> 0 THEN
    RAISE EXCEPTION 'the feeding links changed since the end was rendered' USING ERRCODE = 'EJ412';
  END IF;
END
$$;
