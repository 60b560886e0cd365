package enrich

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/google/wire"

	"github.com/entityenrich/enrich/adapters/crypto"
	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// coreSet builds the app services from a *Stores and a Config.
var coreSet = wire.NewSet(
	wire.FieldsOf(new(*Stores), "Orgs", "Users", "Keys", "Schemas", "Records", "Jobs", "Events"),
	provideLogger,
	wire.Struct(new(system.Clock)),
	wire.Bind(new(ports.Clock), new(system.Clock)),
	wire.Struct(new(system.IDs)),
	wire.Bind(new(ports.IDs), new(system.IDs)),
	jsonschema.New,
	wire.Bind(new(ports.SchemaCompiler), new(*jsonschema.Compiler)),
	provideRegistry,
	wire.Bind(new(ports.LLM), new(*llm.Registry)),
	wire.Bind(new(ports.ModelCatalog), new(*llm.Registry)),
	providePasswords,
	wire.Bind(new(ports.Passwords), new(*crypto.Passwords)),
	provideRunner,
	wire.Bind(new(ports.JobRunner), new(*inproc.Runner)),
	provideHub,
	provideAccess,
	provideSchemas,
	provideRecords,
	provideJobs,
	provideEnrichment,
	provideEmbedded,
)

func provideLogger(cfg Config) *slog.Logger { return cfg.logger() }

func provideRegistry(cfg Config) (*llm.Registry, error) {
	return llm.NewRegistry(llm.Config{Providers: cfg.Providers, Sandbox: cfg.Sandbox, SandboxLatency: cfg.SandboxLatency})
}

func providePasswords(cfg Config) *crypto.Passwords {
	if cfg.PasswordHashing == "fast" {
		return crypto.NewPasswords(crypto.FastParams)
	}
	return crypto.NewPasswords(crypto.DefaultParams)
}

func provideRunner(cfg Config) (*inproc.Runner, func()) {
	r := inproc.New(inproc.Config{Workers: cfg.Workers, PerOrg: cfg.PerOrgWorkers})
	// Embedded.Close shuts the runner down gracefully; this is the backstop
	// for an injector that fails after creating it.
	return r, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
	}
}

func provideHub(log ports.EventLog, clock ports.Clock, lg *slog.Logger) *app.Hub {
	return app.NewHub(log, clock, lg)
}

func provideAccess(cfg Config, st *Stores, pw ports.Passwords, clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.AccessService {
	now := func() time.Time { return clock.Now() }
	admins := map[string]bool{}
	for _, e := range cfg.SysAdminEmails {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			admins[e] = true
		}
	}
	return &app.AccessService{UoW: st.UoW, Orgs: st.Orgs, Users: st.Users, Keys: st.Keys, Passwords: pw,
		Access: crypto.NewTokens([]byte(cfg.JWTSecret), cfg.AccessTokenTTL, now), RefreshTokens: st.RefreshTokens,
		Throttle: access.NewThrottle(), SysAdminEmails: admins, CacheTTL: cfg.AuthCacheTTL, Invalidations: st.Invalidations,
		Clock: clock, IDs: ids, Log: lg, AccessTTL: cfg.AccessTokenTTL}
}

func provideSchemas(st ports.SchemaStore, c ports.SchemaCompiler, clock ports.Clock, ids ports.IDs) *app.SchemaService {
	return &app.SchemaService{Schemas: st, Compiler: c, Clock: clock, IDs: ids}
}

func provideRecords(st ports.RecordStore) *app.RecordService {
	return &app.RecordService{Records: st}
}

func provideJobs(st *Stores, r ports.JobRunner, h *app.Hub, clock ports.Clock, lg *slog.Logger) *app.JobService {
	return &app.JobService{Jobs: st.Jobs, Runner: r, Hub: h, Clock: clock, Log: lg, HeartbeatEvery: 15 * time.Second,
		StaleAfter: time.Minute, Invalidations: st.Invalidations}
}

func provideEnrichment(st *Stores, r ports.JobRunner, h *app.Hub, js *app.JobService, l ports.LLM, cat ports.ModelCatalog,
	c ports.SchemaCompiler, clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.EnrichmentService {
	return &app.EnrichmentService{Schemas: st.Schemas, Records: st.Records, Jobs: st.Jobs, Runner: r, Hub: h, JobSvc: js,
		LLM: l, Catalog: cat, Compiler: c, Clock: clock, IDs: ids, Log: lg}
}

func provideEmbedded(st *Stores, a *app.AccessService, sc *app.SchemaService, rc *app.RecordService, en *app.EnrichmentService,
	js *app.JobService, h *app.Hub, r *inproc.Runner, lg *slog.Logger) *Embedded {
	return &Embedded{Access: a, Schemas: sc, Records: rc, Enrichment: en, Jobs: js, Stores: st, Log: lg, hub: h, runner: r}
}

// httpSet builds the HTTP API from an Embedded core.
var httpSet = wire.NewSet(
	wire.FieldsOf(new(*Embedded), "Access", "Schemas", "Records", "Enrichment", "Jobs", "Log"),
	provideHTTPConfig,
	provideReadiness,
	httpapi.NewServer,
)

func provideHTTPConfig(e *Embedded) httpapi.Config {
	return httpapi.Config{MaxBodyBytes: e.cfg.MaxBodyBytes, SSEHeartbeat: e.cfg.SSEHeartbeat}
}

func provideReadiness(e *Embedded) httpapi.Readiness { return e.Stores.Ready }
