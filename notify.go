package enrich

import (
	"log/slog"

	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/adapters/notify"
	"github.com/entityenrich/enrich/adapters/webhooks"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// notifyStores are the stores of the notifications.
type notifyStores struct {
	Subscriptions ports.SubscriptionStore
	Outbox        ports.Outbox
	Links         ports.LinkWebhookStore
}

// provideNotifyStores are the stores' notification stores; memory stores
// without them get memory ones (whose outbox no job end queues to).
func provideNotifyStores(st *Stores, lg *slog.Logger) (notifyStores, error) {
	if st.Subscriptions == nil || st.Outbox == nil || st.LinkWebhooks == nil {
		if err := inMemory(st, lg, "Subscriptions", "notifications"); err != nil {
			return notifyStores{}, err
		}
		n := memory.NewNotifications()
		st.Subscriptions, st.Outbox, st.LinkWebhooks = n, n, memory.NewLinkWebhooks(memory.NewSyncStore())
	}
	return notifyStores{Subscriptions: st.Subscriptions, Outbox: st.Outbox, Links: st.LinkWebhooks}, nil
}

// provideSender posts notifications through the SSRF guard; loopback ports
// are let through only when the configuration names them (tests).
func provideSender(cfg Config, lg *slog.Logger) *webhooks.Sender {
	return webhooks.New(webhooks.Config{Guard: netguard.Options{AllowLoopbackPorts: cfg.WebhookAllowLoopbackPorts},
		Timeout: cfg.WebhookTimeout, Log: lg})
}

// provideSchemaEvents renders the records of schema events as the records
// API shows them. The entity layer's outcome (Database) joins here.
func provideSchemaEvents(clock ports.Clock) *app.SchemaEvents {
	return &app.SchemaEvents{Render: httpapi.RecordEventData, Database: app.RecordDatabase, Clock: clock}
}

// provideDispatcher is this replica's notification dispatcher (nil with
// ENRICH_WEBHOOK_DISPATCH_OFF).
func provideDispatcher(cfg Config, ns notifyStores, s ports.WebhookSender, c ports.Cipher, clock ports.Clock, lg *slog.Logger) *notify.Dispatcher {
	if cfg.WebhookDispatchOff {
		return nil
	}
	retry := webhook.DefaultRetry
	retry.Base, retry.MaxAttempts = cfg.WebhookRetryBase, cfg.WebhookMaxAttempts
	return notify.New(notify.Deps{Outbox: ns.Outbox, Links: ns.Links, Sender: s, Cipher: c, Clock: clock, Log: lg},
		notify.Config{Retry: retry, Poll: cfg.WebhookPoll, SendTimeout: cfg.WebhookTimeout,
			Retention: cfg.WebhookRetention})
}
