-- The dispatcher prunes finished deliveries (delivered or given up) past
-- their retention; this finds them without a scan of the outbox.
CREATE INDEX event_deliveries_done_idx ON event_deliveries (created_at) WHERE next_attempt_at IS NULL;
