package enrich

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/entityenrich/enrich/adapters/crypto"
	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/notify"
	"github.com/entityenrich/enrich/adapters/webhooks"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/webhook"
)

// Config is the service configuration, read from the environment by
// LoadConfig or filled in by an embedding program.
type Config struct {
	// Addr is the HTTP listen address (default :8080).
	Addr string `env:"ENRICH_ADDR"`
	// DatabaseURL selects PostgreSQL; empty means in-memory storage (data is
	// lost when the process ends).
	DatabaseURL string `env:"DATABASE_URL"`
	// Sandbox enables the built-in deterministic sandbox::* models.
	Sandbox bool `env:"ENRICH_SANDBOX"`
	// SandboxLatency is added to every sandbox call, to imitate a model.
	SandboxLatency time.Duration `env:"ENRICH_SANDBOX_LATENCY"`
	// JWTSecret signs session tokens. Generated per process in development.
	JWTSecret string `env:"ENRICH_JWT_SECRET"`
	// EncryptionKeys are comma-separated Fernet keys; the first encrypts.
	EncryptionKeys string `env:"ENRICH_ENCRYPTION_KEYS"`
	// Env is "development" (default) or "production"; production requires
	// the secrets instead of generating them.
	Env string `env:"ENRICH_ENV" envDefault:"development"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"ENRICH_LOG_LEVEL" envDefault:"info"`
	// ShutdownGrace is how long running jobs may finish at shutdown before
	// they are failed with code shutdown (default 20 s).
	ShutdownGrace time.Duration `env:"ENRICH_SHUTDOWN_GRACE"`
	// AccessTokenTTL is the lifetime of session access tokens (default
	// 15 min).
	AccessTokenTTL time.Duration `env:"ENRICH_ACCESS_TOKEN_TTL"`
	// Workers bounds the jobs running at once; PerOrgWorkers per
	// organization (defaults jobrun.DefaultWorkers and DefaultOrgWorkers).
	Workers       int `env:"ENRICH_WORKERS"`
	PerOrgWorkers int `env:"ENRICH_ORG_WORKERS"`
	// DBMaxConns bounds the PostgreSQL connections (default: 4 per core,
	// at least 8); they are kept open while idle.
	DBMaxConns int `env:"ENRICH_DB_MAX_CONNS"`
	// LeaseTTL is how long a worker's claim on a job lasts unless renewed;
	// a replica that dies has its jobs resumed elsewhere about this long
	// (plus the queue's scheduling, a few seconds) after its last renewal
	// (default jobrun.DefaultLeaseTTL).
	LeaseTTL time.Duration `env:"ENRICH_LEASE_TTL"`
	// JobAttempts bounds how many workers may take one job (resumes after
	// crashes); past it the job fails with code interrupted (default
	// jobrun.DefaultJobAttempts).
	JobAttempts int `env:"ENRICH_JOB_ATTEMPTS"`
	// LLMAttempts bounds the tries of one expertise call (an invalid answer
	// is retried with the validator's account fed back, a transport failure
	// after a pause); default enrichment.DefaultMaxAttempts (5, the
	// reference product's).
	LLMAttempts int `env:"ENRICH_LLM_ATTEMPTS"`
	// BatchConcurrency bounds the entities of one batch enriched at once
	// (POST /api/batch/start; default app.DefaultBatchConcurrency).
	BatchConcurrency int `env:"ENRICH_BATCH_CONCURRENCY"`
	// LLMConcurrency bounds the calls in flight to one provider from this
	// process (ENRICH_PROVIDER_<NAME>_CONCURRENCY overrides it per
	// provider); LLMOrgConcurrency one organization's calls to one provider.
	// Zero: no bound. The sandbox is never bounded. A call past a bound
	// waits, and its job shows provider_queued.
	LLMConcurrency int `env:"ENRICH_LLM_CONCURRENCY" envDefault:"64"`
	// ModelCatalog names a JSON file in the embedded catalog's format
	// (adapters/llm/catalog.json) whose entries replace or extend it:
	// capabilities, context sizes and prices by model name or composite key.
	ModelCatalog      string `env:"ENRICH_MODEL_CATALOG"`
	LLMOrgConcurrency int    `env:"ENRICH_LLM_ORG_CONCURRENCY" envDefault:"16"`
	// MetricsAddr, when set, serves GET /metrics (Prometheus) on its own
	// listen address instead of the API's.
	MetricsAddr string `env:"ENRICH_METRICS_ADDR"`
	// MetricsToken, when set, is the bearer token GET /metrics requires
	// (Authorization: Bearer <token>, compared in constant time; 401
	// without it), on the API's address and on MetricsAddr alike. Empty
	// (the default): /metrics is open, as it was.
	MetricsToken string `env:"ENRICH_METRICS_TOKEN"`
	// MaxBodyBytes bounds request bodies (default httpapi.DefaultMaxBodyBytes).
	MaxBodyBytes int64 `env:"ENRICH_MAX_BODY_BYTES"`
	// SSEHeartbeat is the interval of SSE comment heartbeats (default
	// httpapi.DefaultSSEHeartbeat).
	SSEHeartbeat time.Duration `env:"ENRICH_SSE_HEARTBEAT"`
	// Registration is who may register (ENRICH_REGISTRATION): open
	// (anyone creates an organization), invite (a single-use invitation
	// from an owner or a system administrator; the emails of
	// SysAdminEmails may register without one, to bootstrap) or closed
	// (403 registration_closed). Default: open in development, invite in
	// production.
	Registration string `env:"ENRICH_REGISTRATION"`
	// TrustedProxies are the reverse proxies (IPs or CIDRs,
	// comma-separated) whose X-Forwarded-For is believed: the client
	// address is the right-most address of the header that is not a
	// trusted proxy. Empty (the default): the header is ignored and the
	// client is the connection's peer.
	TrustedProxies []string `env:"ENRICH_TRUSTED_PROXIES" envSeparator:","`
	// SysAdminEmails are users who are system administrators by
	// configuration (comma-separated); `enrich admin grant-sysadmin` sets
	// the flag in the database instead.
	SysAdminEmails []string `env:"ENRICH_SYSADMIN_EMAILS" envSeparator:","`
	// AuthCacheTTL bounds how long an authenticated access key or user is
	// reused without a database read; changes invalidate it at once here and
	// on other instances (NOTIFY, milliseconds later). 0 (the default)
	// disables the cache, so that a revocation is refused by every instance
	// on the very next request.
	AuthCacheTTL time.Duration `env:"ENRICH_AUTH_CACHE_TTL" envDefault:"0s"`
	// SchemaCacheTTL bounds how long a saved schema read to start a job is
	// reused without a database read; every write of the schema drops it at
	// once here and on other instances (NOTIFY, milliseconds later), so the
	// TTL only bounds a lost notification. 0 disables the cache (the zero
	// Config of an embedder: set it to turn the cache on).
	SchemaCacheTTL time.Duration `env:"ENRICH_SCHEMA_CACHE_TTL" envDefault:"1m"`
	// ConceptRouteCacheTTL bounds how long an organization's embedding-model
	// setting and latest migration, which every concept lookup reads, are
	// reused without a database read; their writes drop them at once here
	// and on other instances (NOTIFY), so the TTL only bounds a lost
	// notification. 0 disables the cache (the zero Config of an embedder).
	ConceptRouteCacheTTL time.Duration `env:"ENRICH_CONCEPT_ROUTE_CACHE_TTL" envDefault:"1m"`
	// Caches bounds the in-process caches; a zero field takes its default
	// (DefaultCaches).
	Caches CacheLimits `env:"-"`
	// PasswordHashing "fast" lowers argon2id's cost (tests only).
	PasswordHashing string `env:"ENRICH_PASSWORD_HASHING" envDefault:"standard"`

	// SchemaMaxDepth, SchemaMaxProperties, SchemaMaxSubschemas and
	// SchemaMaxBytes bound every schema the service takes, from a caller or
	// a model, before it is compiled (domain/schema.Limits; defaults
	// schema.DefaultMaxDepth 32, DefaultMaxProperties 2,000,
	// DefaultMaxSubschemas 5,000, DefaultMaxBytes 512 KiB). Past one: 400
	// schema_too_complex naming it.
	SchemaMaxDepth      int `env:"ENRICH_SCHEMA_MAX_DEPTH"`
	SchemaMaxProperties int `env:"ENRICH_SCHEMA_MAX_PROPERTIES"`
	SchemaMaxSubschemas int `env:"ENRICH_SCHEMA_MAX_SUBSCHEMAS"`
	SchemaMaxBytes      int `env:"ENRICH_SCHEMA_MAX_BYTES"`

	// BatchMaxEntities bounds the entities of one batch, and so of a
	// batch fetched from a URL (default app.DefaultBatchMaxEntities).
	BatchMaxEntities int `env:"ENRICH_BATCH_MAX_ENTITIES"`
	// FetchAllowLoopbackPorts lets POST /api/batch/fetch reach loopback
	// addresses on these ports (comma-separated). For tests of a server
	// on this machine only: every other loopback, private, link-local or
	// metadata address stays refused. Empty (the default): none.
	FetchAllowLoopbackPorts []uint16 `env:"ENRICH_FETCH_ALLOW_LOOPBACK_PORTS" envSeparator:","`
	// OrgProviderAllowLoopbackPorts lets organizations' own providers
	// (/api/providers) reach loopback addresses on these ports
	// (comma-separated), like FetchAllowLoopbackPorts: for tests of a
	// server on this machine only. Empty (the default): none.
	OrgProviderAllowLoopbackPorts []uint16 `env:"ENRICH_ORG_PROVIDER_ALLOW_LOOPBACK_PORTS" envSeparator:","`
	// WebhookAllowLoopbackPorts lets notifications (schema event
	// subscriptions and links' delta webhooks) reach loopback addresses on
	// these ports (comma-separated), like FetchAllowLoopbackPorts: for
	// tests of a receiver on this machine only. Empty (the default): none.
	WebhookAllowLoopbackPorts []uint16 `env:"ENRICH_WEBHOOK_ALLOW_LOOPBACK_PORTS" envSeparator:","`
	// WebhookTimeout bounds one delivery attempt (default
	// webhooks.DefaultTimeout, 10 s).
	WebhookTimeout time.Duration `env:"ENRICH_WEBHOOK_TIMEOUT"`
	// WebhookRetryBase is the wait after a delivery's first failed
	// attempt; it doubles after each further one, up to an hour (default
	// 10 s).
	WebhookRetryBase time.Duration `env:"ENRICH_WEBHOOK_RETRY_BASE"`
	// WebhookMaxAttempts gives a delivery up after that many failed
	// attempts (default 20: about 16 hours with the default base).
	WebhookMaxAttempts int `env:"ENRICH_WEBHOOK_MAX_ATTEMPTS"`
	// WebhookRetention is how long finished deliveries (delivered or
	// given up) stay in the outbox before they are pruned (default 7 days).
	WebhookRetention time.Duration `env:"ENRICH_WEBHOOK_RETENTION"`
	// WebhookPoll is how often each replica's dispatcher looks for due
	// notifications (default 1 s).
	WebhookPoll time.Duration `env:"ENRICH_WEBHOOK_POLL"`
	// WebhookDispatchOff runs this replica without a notification
	// dispatcher (the other replicas deliver).
	WebhookDispatchOff bool `env:"ENRICH_WEBHOOK_DISPATCH_OFF"`

	// BlobURL moves attachments' bytes to object storage: a gocloud.dev
	// bucket URL (s3://, gs://, azblob://, file://). Empty (the default):
	// in the database the service stores in (PostgreSQL, or memory).
	BlobURL string `env:"ENRICH_BLOB_URL"`
	// AttachmentMaxBytes bounds one uploaded file (default 32 MiB) and
	// AttachmentMaxRequestBytes one upload request (default 128 MiB);
	// past either the upload is 413 naming the file.
	AttachmentMaxBytes        int64 `env:"ENRICH_ATTACHMENT_MAX_BYTES"`
	AttachmentMaxRequestBytes int64 `env:"ENRICH_ATTACHMENT_MAX_REQUEST_BYTES"`

	// EmbeddingModel embeds semantic concepts for organizations that chose
	// no model (provider::model); the default is the built-in local
	// embedder, which needs no key and no network.
	EmbeddingModel string `env:"ENRICH_EMBEDDING_MODEL" envDefault:"builtin::ngram-384"`
	// ConceptJudgeModel (provider::model) is the identity judge of the
	// semantic concepts' gray band; empty sends the gray band to the
	// review list.
	ConceptJudgeModel string `env:"ENRICH_CONCEPT_JUDGE_MODEL"`

	// MaxExpertiseDomains bounds the expertise domains one model's run of
	// a job calls: past it the domains are grouped (default
	// enrichment.DefaultMaxDomains, 16).
	MaxExpertiseDomains int `env:"ENRICH_MAX_EXPERTISE_DOMAINS"`
	// MaxCallsPerJob bounds the LLM calls of one job, and of each entity
	// of a batch: a request that plans more is refused (400
	// too_many_calls), and a running job's call past it is not made
	// (default app.DefaultMaxCallsPerJob, 256).
	MaxCallsPerJob int `env:"ENRICH_MAX_CALLS_PER_JOB"`
	// QuotaCallsPerDay and QuotaTokensPerDay bound each organization's
	// calls and tokens per UTC day through the operator's provider keys
	// (global keys and the environment's; never the organization's own):
	// past one, 429 with Retry-After (defaults quota.DefaultCallsPerDay
	// and quota.DefaultTokensPerDay; 0 is no limit; nil takes the default).
	QuotaCallsPerDay  *int64 `env:"ENRICH_QUOTA_CALLS_PER_DAY"`
	QuotaTokensPerDay *int64 `env:"ENRICH_QUOTA_TOKENS_PER_DAY"`

	// SchemaRestoreWindow is how long a deleted schema can be restored
	// (0: schema.RestoreWindow, 30 s). Embedders and tests may shorten it.
	SchemaRestoreWindow time.Duration `env:"-"`

	// Providers are LLM providers declared in the environment
	// (ENRICH_PROVIDER_<NAME>_*).
	Providers []llm.ProviderConfig `env:"-"`
	// Logger, when set, receives the logs (embedders); otherwise JSON to stderr.
	Logger *slog.Logger `env:"-"`
}

// CacheLimits bound the in-process caches besides their TTLs (AuthCacheTTL,
// SchemaCacheTTL). Every cache of the service takes its bounds from here.
type CacheLimits struct {
	// SchemaBytes bounds the saved schemas kept for job starts: their
	// documents, plus 1 KiB each.
	SchemaBytes int
	// AuthEntries bounds the access-key prefixes kept to authenticate
	// requests, and the users, each.
	AuthEntries int
	// Validators bounds the compiled JSON Schemas kept by content.
	Validators int
	// Shapes bounds the decoded contracts kept by content, and the run
	// shapes derived from them (app/shape.go), each.
	Shapes int
	// KeyCandidatesTTL is how long a batch of provider-key picks on
	// PostgreSQL reuses the candidate keys it read (a key added by another
	// replica is seen that much later at most); KeyCandidateGroups bounds
	// the organizations and providers whose candidates are kept.
	KeyCandidatesTTL   time.Duration
	KeyCandidateGroups int
	// Clients bounds the provider clients kept, one per model and
	// credential version (adapters/llm).
	Clients int
	// QuotaCounts bounds the organizations whose spend through the
	// operator's keys is kept (each read is reused for a second:
	// app.DefaultQuotaFreshness).
	QuotaCounts int
	// ConceptRoutes bounds the organizations whose concept routes (the
	// embedding-model setting and the latest migration) are kept.
	ConceptRoutes int
}

// DefaultCaches returns the caches' default bounds: the one place where
// they are declared.
func DefaultCaches() CacheLimits {
	return CacheLimits{SchemaBytes: 64 << 20, AuthEntries: 100_000, Validators: 1024, Shapes: 1024,
		KeyCandidatesTTL: 500 * time.Millisecond, KeyCandidateGroups: 10_000,
		Clients: 4096, QuotaCounts: 10_000, ConceptRoutes: 10_000}
}

// withDefaults fills the zero fields from DefaultCaches.
func (l CacheLimits) withDefaults() CacheLimits {
	d := DefaultCaches()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.SchemaBytes, d.SchemaBytes)
	fill(&l.AuthEntries, d.AuthEntries)
	fill(&l.Validators, d.Validators)
	fill(&l.Shapes, d.Shapes)
	fill(&l.KeyCandidateGroups, d.KeyCandidateGroups)
	fill(&l.Clients, d.Clients)
	fill(&l.QuotaCounts, d.QuotaCounts)
	fill(&l.ConceptRoutes, d.ConceptRoutes)
	if l.KeyCandidatesTTL <= 0 {
		l.KeyCandidatesTTL = d.KeyCandidatesTTL
	}
	return l
}

// LoadConfig reads the configuration from environ (os.Environ() form).
func LoadConfig(environ []string) (Config, error) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: m}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	ps, err := llm.ProvidersFromEnv(environ)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c.Providers = ps
	return c, nil
}

// Production reports whether the service runs in production mode.
func (c Config) Production() bool { return c.Env == "production" }

// withDefaults fills what a zero Config (an embedder's) leaves empty and
// generates missing secrets in development. It returns warnings to log.
func (c Config) withDefaults() (Config, []string, error) {
	var warn []string
	if c.Env == "" {
		c.Env = "development"
	}
	if c.Env != "development" && c.Env != "production" {
		return c, nil, fmt.Errorf("config: ENRICH_ENV must be development or production, not %q", c.Env)
	}
	w, err := c.secretDefaults()
	if err != nil {
		return c, nil, err
	}
	warn = append(warn, w...)
	if c.AccessTokenTTL <= 0 {
		c.AccessTokenTTL = 15 * time.Minute
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 20 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = jobrun.DefaultWorkers
	}
	if c.PerOrgWorkers <= 0 {
		c.PerOrgWorkers = jobrun.DefaultOrgWorkers
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = jobrun.DefaultLeaseTTL
	}
	if c.JobAttempts <= 0 {
		c.JobAttempts = jobrun.DefaultJobAttempts
	}
	if c.LLMAttempts <= 0 {
		c.LLMAttempts = enrichment.DefaultMaxAttempts
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = httpapi.DefaultMaxBodyBytes
	}
	if c.SSEHeartbeat <= 0 {
		c.SSEHeartbeat = httpapi.DefaultSSEHeartbeat
	}
	if c.BatchConcurrency <= 0 {
		c.BatchConcurrency = app.DefaultBatchConcurrency
	}
	if c.BatchMaxEntities <= 0 {
		c.BatchMaxEntities = app.DefaultBatchMaxEntities
	}
	if c.AttachmentMaxBytes <= 0 {
		c.AttachmentMaxBytes = 32 << 20
	}
	if c.AttachmentMaxRequestBytes <= 0 {
		c.AttachmentMaxRequestBytes = 128 << 20
	}
	if c.WebhookTimeout <= 0 {
		c.WebhookTimeout = webhooks.DefaultTimeout
	}
	if c.WebhookRetryBase <= 0 {
		c.WebhookRetryBase = webhook.DefaultRetry.Base
	}
	if c.WebhookMaxAttempts <= 0 {
		c.WebhookMaxAttempts = webhook.DefaultRetry.MaxAttempts
	}
	if c.WebhookPoll <= 0 {
		c.WebhookPoll = notify.DefaultPoll
	}
	if c.MetricsToken == "" && c.MetricsAddr == "" && c.Production() {
		warn = append(warn, "ENRICH_METRICS_TOKEN is not set: GET /metrics on the API's address needs no credential (set it, or serve the metrics on ENRICH_METRICS_ADDR)")
	}
	if err := c.limitDefaults(); err != nil {
		return c, nil, err
	}
	if c.Addr == "" {
		c.Addr = ":8080"
	}
	l := c.schemaLimits().WithDefaults()
	c.SchemaMaxDepth, c.SchemaMaxProperties, c.SchemaMaxSubschemas, c.SchemaMaxBytes = l.MaxDepth, l.MaxProperties, l.MaxSubschemas, l.MaxBytes
	c.Caches = c.Caches.withDefaults()
	c, err = c.withAccessDefaults()
	return c, warn, err
}

// withAccessDefaults fills and checks the registration mode (open in
// development, invite in production) and the trusted proxies.
func (c Config) withAccessDefaults() (Config, error) {
	if c.Registration == "" {
		c.Registration = access.RegistrationOpen
		if c.Production() {
			c.Registration = access.RegistrationInvite
		}
	}
	switch c.Registration {
	case access.RegistrationOpen, access.RegistrationInvite, access.RegistrationClosed:
	default:
		return c, fmt.Errorf("config: ENRICH_REGISTRATION must be open, invite or closed, not %q", c.Registration)
	}
	if _, err := httpapi.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return c, fmt.Errorf("config: ENRICH_TRUSTED_PROXIES: %w", err)
	}
	return c, nil
}

// schemaLimits are the schema limits configured (a zero field: its
// default, schema.DefaultLimits).
func (c Config) schemaLimits() schema.Limits {
	return schema.Limits{MaxDepth: c.SchemaMaxDepth, MaxProperties: c.SchemaMaxProperties, MaxSubschemas: c.SchemaMaxSubschemas,
		MaxBytes: c.SchemaMaxBytes}
}

// secretDefaults checks the token and encryption secrets, generating
// them for this process in development.
func (c *Config) secretDefaults() ([]string, error) {
	var warn []string
	if c.JWTSecret == "" {
		if c.Production() {
			return warn, errors.New("config: ENRICH_JWT_SECRET is required in production")
		}
		var b [32]byte
		_, _ = rand.Read(b[:])
		c.JWTSecret = hex.EncodeToString(b[:])
		warn = append(warn, "ENRICH_JWT_SECRET is not set: generated one for this process; sessions end when it stops")
	}
	if strings.TrimSpace(c.EncryptionKeys) == "" {
		if c.Production() {
			return warn, errors.New("config: ENRICH_ENCRYPTION_KEYS is required in production (comma-separated Fernet keys; the first encrypts)")
		}
		k, err := crypto.GenerateFernetKey()
		if err != nil {
			return warn, fmt.Errorf("config: generate an encryption key: %w", err)
		}
		c.EncryptionKeys = k
		w := "ENRICH_ENCRYPTION_KEYS is not set: generated one for this process"
		if c.DatabaseURL != "" {
			w += "; provider keys stored now will not open after a restart"
		}
		warn = append(warn, w)
	}
	if _, err := crypto.NewFernet(strings.Split(c.EncryptionKeys, ",")); err != nil {
		return warn, fmt.Errorf("config: ENRICH_ENCRYPTION_KEYS: %w", err)
	}
	if len(c.JWTSecret) < 32 {
		return warn, errors.New("config: ENRICH_JWT_SECRET must have at least 32 characters")
	}
	return warn, nil
}

// limitDefaults fills the limits on a job's calls and the operator's
// quotas (docs/security.md).
func (c *Config) limitDefaults() error {
	if c.MaxExpertiseDomains <= 0 {
		c.MaxExpertiseDomains = enrichment.DefaultMaxDomains
	}
	if c.MaxCallsPerJob <= 0 {
		c.MaxCallsPerJob = app.DefaultMaxCallsPerJob
	}
	c.QuotaCallsPerDay = orDefault(c.QuotaCallsPerDay, quota.DefaultCallsPerDay)
	c.QuotaTokensPerDay = orDefault(c.QuotaTokensPerDay, quota.DefaultTokensPerDay)
	if *c.QuotaCallsPerDay < 0 || *c.QuotaTokensPerDay < 0 {
		return errors.New("config: ENRICH_QUOTA_CALLS_PER_DAY and ENRICH_QUOTA_TOKENS_PER_DAY must be 0 (no limit) or more")
	}
	return nil
}

// orDefault is v, or a new def when v is unset (nil).
func orDefault(v *int64, def int64) *int64 {
	if v != nil {
		return v
	}
	return &def
}

// Quota returns n as a quota setting (0: no limit), for a Config's
// QuotaCallsPerDay and QuotaTokensPerDay.
func Quota(n int64) *int64 { return &n }

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
}
