package enrich_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
)

// TestWebhookConfig: the loopback allowance of notifications is empty
// unless set, and the timing settings read durations.
func TestWebhookConfig(t *testing.T) {
	is := is.New(t)
	c, err := enrich.LoadConfig(nil)
	is.NoErr(err)
	is.Equal(len(c.WebhookAllowLoopbackPorts), 0)
	is.True(!c.WebhookDispatchOff)
	c, err = enrich.LoadConfig([]string{"ENRICH_WEBHOOK_ALLOW_LOOPBACK_PORTS=8081,9000", "ENRICH_WEBHOOK_RETRY_BASE=2s",
		"ENRICH_WEBHOOK_MAX_ATTEMPTS=3", "ENRICH_WEBHOOK_POLL=100ms", "ENRICH_WEBHOOK_TIMEOUT=5s", "ENRICH_WEBHOOK_DISPATCH_OFF=true"})
	is.NoErr(err)
	is.Equal(c.WebhookAllowLoopbackPorts, []uint16{8081, 9000})
	is.Equal(c.WebhookRetryBase, 2*time.Second)
	is.Equal(c.WebhookMaxAttempts, 3)
	is.Equal(c.WebhookPoll, 100*time.Millisecond)
	is.Equal(c.WebhookTimeout, 5*time.Second)
	is.True(c.WebhookDispatchOff)
	_, err = enrich.LoadConfig([]string{"ENRICH_WEBHOOK_ALLOW_LOOPBACK_PORTS=99999"})
	is.True(err != nil)
}
