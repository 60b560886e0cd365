package enrich

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/notify"
	"github.com/entityenrich/enrich/adapters/webhooks"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/webhook"
)

// TestDefaultsDeclaredOnce: a server started from an empty environment and
// an embedder's zero Config get their defaults from the one place each is
// declared (withDefaults, from the components' constants), never from a
// second copy in a struct tag.
func TestDefaultsDeclaredOnce(t *testing.T) {
	is := is.New(t)
	fromEnv, err := LoadConfig(nil)
	is.NoErr(err)
	keys := Config{JWTSecret: "0123456789abcdef0123456789abcdef"}
	fromEnv.JWTSecret = keys.JWTSecret
	env, _, err := fromEnv.withDefaults()
	is.NoErr(err)
	zero, _, err := keys.withDefaults()
	is.NoErr(err)
	for _, tt := range []struct {
		name      string
		env, zero any
		want      any
	}{
		{"Addr", env.Addr, zero.Addr, ":8080"},
		{"ShutdownGrace", env.ShutdownGrace, zero.ShutdownGrace, 20 * time.Second},
		{"AccessTokenTTL", env.AccessTokenTTL, zero.AccessTokenTTL, 15 * time.Minute},
		{"Workers", env.Workers, zero.Workers, jobrun.DefaultWorkers},
		{"PerOrgWorkers", env.PerOrgWorkers, zero.PerOrgWorkers, jobrun.DefaultOrgWorkers},
		{"LeaseTTL", env.LeaseTTL, zero.LeaseTTL, jobrun.DefaultLeaseTTL},
		{"JobAttempts", env.JobAttempts, zero.JobAttempts, jobrun.DefaultJobAttempts},
		{"BatchConcurrency", env.BatchConcurrency, zero.BatchConcurrency, app.DefaultBatchConcurrency},
		{"BatchMaxEntities", env.BatchMaxEntities, zero.BatchMaxEntities, app.DefaultBatchMaxEntities},
		{"MaxBodyBytes", env.MaxBodyBytes, zero.MaxBodyBytes, int64(httpapi.DefaultMaxBodyBytes)},
		{"SSEHeartbeat", env.SSEHeartbeat, zero.SSEHeartbeat, httpapi.DefaultSSEHeartbeat},
		{"Caches", env.Caches, zero.Caches, DefaultCaches()},
		{"Registration", env.Registration, zero.Registration, "open"},
		{"SchemaMaxDepth", env.SchemaMaxDepth, zero.SchemaMaxDepth, schema.DefaultMaxDepth},
		{"SchemaMaxProperties", env.SchemaMaxProperties, zero.SchemaMaxProperties, schema.DefaultMaxProperties},
		{"SchemaMaxSubschemas", env.SchemaMaxSubschemas, zero.SchemaMaxSubschemas, schema.DefaultMaxSubschemas},
		{"SchemaMaxBytes", env.SchemaMaxBytes, zero.SchemaMaxBytes, schema.DefaultMaxBytes},
		{"MetricsToken", env.MetricsToken, zero.MetricsToken, ""},
		{"MaxExpertiseDomains", env.MaxExpertiseDomains, zero.MaxExpertiseDomains, enrichment.DefaultMaxDomains},
		{"MaxCallsPerJob", env.MaxCallsPerJob, zero.MaxCallsPerJob, app.DefaultMaxCallsPerJob},
		{"WebhookTimeout", env.WebhookTimeout, zero.WebhookTimeout, webhooks.DefaultTimeout},
		{"WebhookRetryBase", env.WebhookRetryBase, zero.WebhookRetryBase, webhook.DefaultRetry.Base},
		{"WebhookMaxAttempts", env.WebhookMaxAttempts, zero.WebhookMaxAttempts, webhook.DefaultRetry.MaxAttempts},
		{"WebhookPoll", env.WebhookPoll, zero.WebhookPoll, notify.DefaultPoll},
		{"QuotaCallsPerDay", *env.QuotaCallsPerDay, *zero.QuotaCallsPerDay, int64(quota.DefaultCallsPerDay)},
		{"QuotaTokensPerDay", *env.QuotaTokensPerDay, *zero.QuotaTokensPerDay, int64(quota.DefaultTokensPerDay)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(tt.env, tt.want)
			is.Equal(tt.zero, tt.want)
		})
	}
}

// TestRegistrationDefault: open in development, invite in production; an
// unknown mode or a malformed trusted proxy is refused at start.
func TestRegistrationDefault(t *testing.T) {
	is := is.New(t)
	keys := Config{JWTSecret: "0123456789abcdef0123456789abcdef", EncryptionKeys: "aGVsbG8taGVsbG8taGVsbG8taGVsbG8taGVsbG8tMTI="}
	dev, _, err := keys.withDefaults()
	is.NoErr(err)
	is.Equal(dev.Registration, "open")
	prod := keys
	prod.Env = "production"
	p, _, err := prod.withDefaults()
	is.NoErr(err)
	is.Equal(p.Registration, "invite")
	bad := keys
	bad.Registration = "sometimes"
	_, _, err = bad.withDefaults()
	is.True(err != nil)
	proxies := keys
	proxies.TrustedProxies = []string{"10.0.0.0/8", "127.0.0.1"}
	_, _, err = proxies.withDefaults()
	is.NoErr(err)
	proxies.TrustedProxies = []string{"proxy.example"}
	_, _, err = proxies.withDefaults()
	is.True(err != nil)
}
