DROP INDEX IF EXISTS event_deliveries_done_idx;
