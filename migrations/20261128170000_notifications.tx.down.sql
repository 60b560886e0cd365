DROP TABLE IF EXISTS link_notifications;
--bun:split
DROP TABLE IF EXISTS event_deliveries;
--bun:split
DROP TABLE IF EXISTS schema_subscriptions;
