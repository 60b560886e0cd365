package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// MaxSubscriptionsPerSchema bounds a schema's subscriptions: every
// enrichment of the schema queues one delivery per subscription.
const MaxSubscriptionsPerSchema = 25

// SubscriptionSources are the values of a subscription's source.
var SubscriptionSources = []string{"manual", "n8n", "make"}

// NotificationService manages schema event subscriptions and the links'
// delta webhooks. Secrets are minted here, sealed by the Cipher before
// they are stored, and shown to their owner: a subscription's once, at
// creation; a link's on every attach and to the registration's owner.
type NotificationService struct {
	Subscriptions ports.SubscriptionStore
	Links         ports.LinkWebhookStore
	Schemas       ports.SchemaStore
	Sender        ports.WebhookSender
	Cipher        ports.Cipher
	Clock         ports.Clock
	IDs           ports.IDs
}

// NewNotificationService returns a NotificationService.
func NewNotificationService(subs ports.SubscriptionStore, links ports.LinkWebhookStore, schemas ports.SchemaStore,
	sender ports.WebhookSender, cipher ports.Cipher, clock ports.Clock, ids ports.IDs) *NotificationService {
	return &NotificationService{Subscriptions: subs, Links: links, Schemas: schemas, Sender: sender, Cipher: cipher,
		Clock: clock, IDs: ids}
}

// SubscriptionInput is a new subscription.
type SubscriptionInput struct {
	URL    string
	Source string // "" is manual
}

// ListSubscriptions returns a schema's subscriptions, oldest first, without
// their secrets.
func (s *NotificationService) ListSubscriptions(ctx context.Context, p *access.Principal, schemaID string) ([]*ports.Subscription, error) {
	if err := s.schemaOf(ctx, p, access.ActListSubscriptions, schemaID); err != nil {
		return nil, err
	}
	subs, err := s.Subscriptions.ListSubscriptions(ctx, p.OrgID, schemaID)
	for _, sub := range subs {
		sub.Secret = ""
	}
	return subs, err
}

// CreateSubscription subscribes a URL to a schema's events and returns the
// subscription with its signing secret (shown this once).
func (s *NotificationService) CreateSubscription(ctx context.Context, p *access.Principal, schemaID string,
	in SubscriptionInput) (*ports.Subscription, string, error) {
	if err := s.schemaOf(ctx, p, access.ActCreateSubscription, schemaID); err != nil {
		return nil, "", err
	}
	if in.Source == "" {
		in.Source = "manual"
	}
	if !slices.Contains(SubscriptionSources, in.Source) {
		return nil, "", Invalid("source", "source must be one of %s", strings.Join(SubscriptionSources, ", "))
	}
	if err := s.checkURL(ctx, "url", in.URL); err != nil {
		return nil, "", err
	}
	existing, err := s.Subscriptions.ListSubscriptions(ctx, p.OrgID, schemaID)
	if err != nil {
		return nil, "", err
	}
	if len(existing) >= MaxSubscriptionsPerSchema {
		return nil, "", coded(ports.ErrConflict, "too_many_subscriptions",
			"a schema has at most %d subscriptions; delete one first", MaxSubscriptionsPerSchema)
	}
	secret := webhook.NewSecret()
	sealed, err := s.Cipher.Seal([]byte(secret))
	if err != nil {
		return nil, "", err
	}
	sub := &ports.Subscription{ID: s.IDs.NewID(), OrgID: p.OrgID, SchemaID: schemaID, URL: in.URL, Source: in.Source,
		Secret: string(sealed), CreatedAt: s.Clock.Now()}
	if err := s.Subscriptions.CreateSubscription(ctx, sub); err != nil {
		return nil, "", err
	}
	sub.Secret = ""
	return sub, secret, nil
}

// DeleteSubscriptions deletes a schema's subscription by id, or its
// subscriptions to a URL; deleting none is not an error.
func (s *NotificationService) DeleteSubscriptions(ctx context.Context, p *access.Principal, schemaID string, m ports.SubscriptionMatch) error {
	if err := s.schemaOf(ctx, p, access.ActDeleteSubscription, schemaID); err != nil {
		return err
	}
	if err := checkText("subscription_id", m.ID); err != nil {
		return err
	}
	if err := checkText("url", m.URL); err != nil {
		return err
	}
	if (m.ID == "") == (m.URL == "") {
		return Invalid("subscription_id", "give subscription_id or url (one of them)")
	}
	_, err := s.Subscriptions.DeleteSubscriptions(ctx, p.OrgID, schemaID, m)
	return err
}

// schemaOf authorizes a on one of the organization's live schemas (404
// for another organization's).
func (s *NotificationService) schemaOf(ctx context.Context, p *access.Principal, a access.Action, schemaID string) error {
	if err := access.Authorize(p, a); err != nil {
		return err
	}
	if err := checkID(schemaID); err != nil {
		return err
	}
	_, err := liveSchema(ctx, s.Schemas, p.OrgID, schemaID)
	return err
}

// checkURL refuses a webhook URL the sender would not deliver to (400
// naming field).
func (s *NotificationService) checkURL(ctx context.Context, field, url string) error {
	if err := checkText(field, url); err != nil {
		return err
	}
	if url == "" {
		return Invalid(field, "%s is required", field)
	}
	if err := s.Sender.CheckURL(ctx, url); err != nil {
		if errors.Is(err, ports.ErrWebhookRefused) {
			return &Error{Kind: ports.ErrInvalid, Code: "webhook_url_refused", Field: field,
				Detail: field + ": " + strings.TrimPrefix(err.Error(), ports.ErrWebhookRefused.Error()+": ")}
		}
		return err
	}
	return nil
}

// SetLinkWebhook attaches url as the delta webhook of the link of schemaID
// to registration databaseID (nil detaches it) and returns the link's
// signing secret (nil when detached). The secret is minted on the first
// attach and kept when the URL changes.
func (s *NotificationService) SetLinkWebhook(ctx context.Context, p *access.Principal, databaseID, schemaID string, url *string) (*string, error) {
	if err := access.AuthorizeDatabase(p, access.ActSetDatabaseWebhook, databaseID); err != nil {
		return nil, err
	}
	if err := checkLinkIDs(databaseID, schemaID); err != nil {
		return nil, err
	}
	target := ""
	if url != nil {
		if err := s.checkURL(ctx, "webhook_url", *url); err != nil {
			return nil, err
		}
		target = *url
	}
	sealed, err := s.Cipher.Seal([]byte(webhook.NewSecret()))
	if err != nil {
		return nil, err
	}
	stored, err := s.Links.SetLinkWebhook(ctx, p.OrgID, databaseID, schemaID, target, string(sealed))
	if err != nil {
		return nil, linkNotFound(err, databaseID, schemaID)
	}
	if url == nil {
		return nil, nil
	}
	return s.open(stored)
}

// WebhookSecret returns the signing secret of a link's delta webhook (nil
// when none was minted). Owner only.
func (s *NotificationService) WebhookSecret(ctx context.Context, p *access.Principal, databaseID, schemaID string) (*string, error) {
	if err := access.AuthorizeDatabase(p, access.ActGetWebhookSecret, databaseID); err != nil {
		return nil, err
	}
	if err := checkLinkIDs(databaseID, schemaID); err != nil {
		return nil, err
	}
	_, sealed, err := s.Links.LinkWebhook(ctx, p.OrgID, databaseID, schemaID)
	if err != nil {
		return nil, linkNotFound(err, databaseID, schemaID)
	}
	if sealed == "" {
		return nil, nil
	}
	return s.open(sealed)
}

func (s *NotificationService) open(sealed string) (*string, error) {
	plain, err := s.Cipher.Open([]byte(sealed))
	if err != nil {
		return nil, err
	}
	out := string(plain)
	return &out, nil
}

func checkLinkIDs(databaseID, schemaID string) error {
	if err := checkText("database_id", databaseID); err != nil {
		return err
	}
	return checkText("saved_schema_id", schemaID)
}

func linkNotFound(err error, databaseID, schemaID string) error {
	if errors.Is(err, ports.ErrNotFound) {
		if schemaID == "" {
			return coded(ports.ErrNotFound, "not_found", "database %s not found", databaseID)
		}
		return coded(ports.ErrNotFound, "not_found", "database %s has no link to schema %s", databaseID, schemaID)
	}
	return err
}
