package ports

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/webhook"
)

// Subscription is a schema event subscription: the URL that receives the
// schema's events, signed with Secret.
type Subscription struct {
	ID       string
	OrgID    string
	SchemaID string
	URL      string
	Source   string // manual, n8n, make
	// Secret is the signing secret, sealed by the Cipher (the store keeps
	// what it is given).
	Secret    string
	CreatedAt time.Time
}

// SubscriptionStore keeps schema event subscriptions, scoped to one
// organization.
type SubscriptionStore interface {
	CreateSubscription(ctx context.Context, s *Subscription) error
	// ListSubscriptions returns a schema's subscriptions, oldest first.
	ListSubscriptions(ctx context.Context, orgID, schemaID string) ([]*Subscription, error)
	// DeleteSubscriptions deletes the schema's subscriptions with id m.ID,
	// or else with URL m.URL, and returns how many it deleted (none is not
	// an error). Their queued deliveries go with them.
	DeleteSubscriptions(ctx context.Context, orgID, schemaID string, m SubscriptionMatch) (int, error)
}

// SubscriptionMatch selects subscriptions to delete: by ID when set, else
// by URL.
type SubscriptionMatch struct {
	ID  string
	URL string
}

// SchemaEvent is an event of a schema for its subscriptions. It is queued
// in the commit that makes it true (a job's end), once per subscription the
// schema has then; a schema without subscriptions queues nothing.
type SchemaEvent struct {
	// ID is the event's id (X-EE-Event-Id): the same for each of the
	// schema's subscriptions and on every retry.
	ID       string
	OrgID    string
	SchemaID string
	Event    webhook.Event
	Data     json.RawMessage
	At       time.Time
}

// EventQueue queues schema events as deliveries to the schemas'
// subscriptions. Inside a unit of work (Repos.Outbox) they commit with its
// other writes, or not at all.
type EventQueue interface {
	QueueEvents(ctx context.Context, events []SchemaEvent) error
}

// Delivery is one event on its way to one subscription.
type Delivery struct {
	ID       string // unique per event and subscription
	EventID  string
	Event    webhook.Event
	Data     json.RawMessage
	URL      string
	Secret   string // sealed
	Attempts int    // counting the one this claim is for
}

// Outbox keeps the deliveries of schema events until they are delivered or
// given up. Every replica's dispatcher claims from it: a claim leases the
// deliveries it returns, so that no other claims them before leaseUntil.
type Outbox interface {
	EventQueue
	// ClaimDeliveries leases up to n deliveries that are due at now (not
	// delivered, not given up, next attempt reached), oldest first, until
	// leaseUntil, and counts the attempt.
	ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, n int) ([]Delivery, error)
	// DeliverySent marks a delivery delivered.
	DeliverySent(ctx context.Context, id string, at time.Time) error
	// DeliveryFailed records a failed attempt: tried again at next, or
	// given up when next is zero. lastError is kept for operators.
	DeliveryFailed(ctx context.Context, id string, next time.Time, lastError string) error
	// PruneDeliveries deletes up to n deliveries that are finished
	// (delivered or given up) and were queued before `before`, and says
	// how many it deleted. The outbox would otherwise grow with every
	// event ever sent.
	PruneDeliveries(ctx context.Context, before time.Time, n int) (int64, error)
}

// LinkNotice is a link's delta-available notification that is due: the
// link's deltas above what was notified, up to MaxDeltaID.
type LinkNotice struct {
	DatabaseID string
	SchemaID   string
	// First and Last are when the oldest and the newest of those deltas
	// were appended.
	First, Last time.Time
	MaxDeltaID  int64
	// DebounceS and CapS are the registration's notify_debounce_s and
	// max_threshold_timeout_s.
	DebounceS, CapS int
	// NextAttempt is when a failed notification is tried again (zero:
	// none failed).
	NextAttempt time.Time
	Attempts    int // failed attempts so far
	// URL and Secret (sealed) are set by ClaimLinkNotice.
	URL, Secret string
}

// LinkWebhookStore keeps each link's delta-available webhook (its URL and
// signing secret, in database_links) and its notification state.
type LinkWebhookStore interface {
	// SetLinkWebhook sets the webhook URL of the link of schemaID to
	// registration databaseID ("" detaches it). A link without a secret
	// gets secret (sealed); a link that has one keeps it. It returns the
	// link's secret as stored. ErrNotFound when the organization has no
	// such link.
	SetLinkWebhook(ctx context.Context, orgID, databaseID, schemaID, url, secret string) (string, error)
	// LinkWebhook returns the link's webhook URL and sealed secret (""
	// when none was minted). With schemaID "", the registration's first
	// link that has a secret, else its first link.
	LinkWebhook(ctx context.Context, orgID, databaseID, schemaID string) (url, secret string, err error)
	// PendingLinkNotices returns up to n links with a webhook, enrichment
	// enabled, no live claim, and deltas of their schema above both what
	// was notified and the feed's acknowledged watermark. The caller
	// decides which are due (domain/webhook's Debounce).
	PendingLinkNotices(ctx context.Context, now time.Time, n int) ([]LinkNotice, error)
	// ClaimLinkNotice leases a link's notification until leaseUntil, when
	// no claim of it is live, and returns it with its URL and secret (ok
	// false when another holds it or the link lost its webhook).
	ClaimLinkNotice(ctx context.Context, databaseID, schemaID string, now, leaseUntil time.Time) (LinkNotice, bool, error)
	// LinkNoticeSent records that the deltas up to upTo were notified
	// (failures forgotten, the claim released).
	LinkNoticeSent(ctx context.Context, databaseID, schemaID string, upTo int64) error
	// LinkNoticeFailed records a failed attempt, tried again at next, and
	// releases the claim.
	LinkNoticeFailed(ctx context.Context, databaseID, schemaID string, attempts int, next time.Time) error
}

// WebhookRequest is one signed POST of a notification.
type WebhookRequest struct {
	URL       string
	EventID   string
	Event     webhook.Event
	Signature string
	Body      []byte
}

// WebhookSender posts notifications to customers' URLs through an SSRF-safe
// client: addresses that are not public are refused before any
// connection, redirects are not followed, and time is bounded.
type WebhookSender interface {
	// CheckURL refuses (ErrWebhookRefused) a URL the sender will not
	// deliver to: not absolute http or https, credentials in it, or a host
	// that resolves to an address that is not public.
	CheckURL(ctx context.Context, url string) error
	// Send posts the request; any answer but 2xx is an error.
	Send(ctx context.Context, r WebhookRequest) error
}

// ErrWebhookRefused means a webhook URL leads to an address or a port the
// SSRF guard refuses (or is not an http URL).
var ErrWebhookRefused = errors.New("webhook URL refused")
