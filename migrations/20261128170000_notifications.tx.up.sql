-- Notifications (issue 28): schema event subscriptions, the outbox of their
-- deliveries, and each link's delta-webhook notification state.
--
-- A subscription's secret is sealed by the server's cipher (Fernet).
CREATE TABLE schema_subscriptions (
    id         text PRIMARY KEY,
    org_id     text NOT NULL,
    schema_id  text NOT NULL REFERENCES schemas (id) ON DELETE CASCADE,
    url        text NOT NULL,
    source     text NOT NULL,
    secret     text NOT NULL,
    created_at timestamptz NOT NULL
);
--bun:split
CREATE INDEX schema_subscriptions_schema_idx ON schema_subscriptions (schema_id, created_at, id);
--bun:split
-- One row per event and subscription, queued in the commit that makes the
-- event true (a job's end). next_attempt_at is when a dispatcher may claim
-- it: a claim moves it to the end of its lease, a failure to the next
-- retry; NULL once delivered or given up (delivered_at tells which).
CREATE TABLE event_deliveries (
    id              text PRIMARY KEY,
    subscription_id text NOT NULL REFERENCES schema_subscriptions (id) ON DELETE CASCADE,
    event_id        text NOT NULL,
    event           text NOT NULL,
    data            text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    delivered_at    timestamptz,
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL
);
--bun:split
CREATE INDEX event_deliveries_due_idx ON event_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
--bun:split
CREATE INDEX event_deliveries_subscription_idx ON event_deliveries (subscription_id);
--bun:split
-- A link's delta-webhook state: the deltas up to notified_up_to were
-- notified; failed attempts, the next one, and a notifier's claim.
CREATE TABLE link_notifications (
    database_id     text NOT NULL,
    schema_id       text NOT NULL,
    notified_up_to  bigint NOT NULL DEFAULT 0,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    lease_until     timestamptz,
    PRIMARY KEY (database_id, schema_id),
    FOREIGN KEY (database_id, schema_id) REFERENCES database_links (database_id, schema_id) ON DELETE CASCADE
);
