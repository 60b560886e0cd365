package enrich

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/wire"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
)

var memorySet = wire.NewSet(eventCodecSet, provideMemoryStores)

var postgresSet = wire.NewSet(eventCodecSet, providePostgres, providePostgresStores)

// eventCodecSet is the wire form of job events: the event logs store it and
// the HTTP API streams it.
var eventCodecSet = wire.NewSet(jobcodec.NewEvents, wire.Bind(new(ports.EventCodec), new(jobcodec.Events)))

func provideMemoryStores(codec ports.EventCodec) *Stores {
	orgs, users, keys := memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore()
	schemas, records, jobs := memory.NewSchemaStore(), memory.NewRecordStore(), memory.NewJobStore()
	events, refresh := memory.NewEventLog(codec), memory.NewRefreshTokenStore()
	queue := inproc.New()
	ledger := memory.NewUsageLedger()
	invitations := memory.NewInvitationStore()
	// The registry, the feed, the entity layer and the consumer's stores
	// share one SyncStore.
	sync := memory.NewSyncStore()
	notes := memory.NewNotifications()
	concepts, links, reviews := memory.NewConceptStore(), memory.NewConceptLinks(), memory.NewConceptReviews()
	return &Stores{
		Concepts: concepts, Vectors: concepts, Reviews: reviews, EmbeddingSettings: memory.NewEmbeddingSettings(),
		ConceptLinks: links, ConceptMigrations: memory.NewConceptMigrations(),
		Entities:    sync,
		Credentials: memory.NewCredentialStore(sync), Snapshots: sync,
		LoginFailures: memory.NewLoginThrottleStore(), DeniedTokens: memory.NewDeniedTokenStore(), Invitations: invitations,
		Orgs: orgs, Users: users, Keys: keys, Schemas: schemas, Records: records, Jobs: jobs, Events: events,
		RefreshTokens: refresh, Queue: queue, ProviderKeys: memory.NewProviderKeyStore(), Usage: ledger, OrgProviders: memory.NewProviderStore(),
		UoW: memory.NewUnitOfWork(orgs, users, keys, schemas, records, jobs, events, refresh, queue).WithUsage(ledger).WithInvitations(invitations).
			WithSync(sync).WithOutbox(notes).WithConcepts(concepts, links, reviews),
		Subscriptions: notes, Outbox: notes, LinkWebhooks: memory.NewLinkWebhooks(sync),
		Databases: sync, Feed: sync, Attachments: memory.NewAttachmentStore(), Blobs: memory.NewBlobStore(), Kind: "memory",
	}
}

// providePostgres opens the database and applies the migrations.
func providePostgres(ctx context.Context, cfg Config, lg *slog.Logger) (*postgres.DB, func(), error) {
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.PoolConfig{MaxConns: cfg.DBMaxConns})
	if err != nil {
		return nil, nil, fmt.Errorf("open database: %w", err)
	}
	applied, err := postgres.MigrateApplied(ctx, db.DB)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("migrate database: %w", err)
	}
	lg.Info("database ready", "storage", "postgres", "migrations_applied", applied)
	return db, func() { _ = db.Close() }, nil
}

func providePostgresStores(ctx context.Context, pdb *postgres.DB, cfg Config, clock ports.Clock, lg *slog.Logger, codec ports.EventCodec) (*Stores, error) {
	queue, err := postgres.NewQueue(pdb, postgres.QueueConfig{}, lg)
	if err != nil {
		return nil, err
	}
	db := pdb.DB
	// pgvector where the migrations found the extension, else the exact
	// index.
	vectors, err := postgres.NewVectorIndex(ctx, db)
	if err != nil {
		return nil, err
	}
	return &Stores{
		Queue: queue, UoW: postgres.NewUnitOfWork(db, codec, func(tx bun.Tx) ports.JobEnqueuer { return queue.TxEnqueuer(tx) }),
		Orgs: postgres.NewOrgStore(db), Users: postgres.NewUserStore(db), Keys: postgres.NewAPIKeyStore(db),
		Schemas: postgres.NewSchemaStore(db), Records: postgres.NewRecordStore(db), Jobs: postgres.NewJobStore(db),
		Events: postgres.NewEventLog(db, codec), RefreshTokens: postgres.NewRefreshTokenStore(db), ProviderKeys: postgres.NewProviderKeyStore(db, postgres.WithCandidateCache(cfg.Caches.KeyCandidatesTTL, cfg.Caches.KeyCandidateGroups, clock)),
		Usage: postgres.NewUsageLedger(db), OrgProviders: postgres.NewProviderStore(db), Entities: postgres.NewEntityStore(db), Feed: postgres.NewFeedStore(db),
		Subscriptions: postgres.NewNotifications(db), Outbox: postgres.NewNotifications(db), LinkWebhooks: postgres.NewLinkWebhooks(db),
		LoginFailures: postgres.NewLoginThrottleStore(db), DeniedTokens: postgres.NewDeniedTokenStore(db), Invitations: postgres.NewInvitationStore(db),
		Credentials: postgres.NewCredentialStore(db), Snapshots: postgres.NewSnapshotReader(db),
		Databases: postgres.NewDatabaseStore(db), Attachments: postgres.NewAttachmentStore(db), Blobs: postgres.NewBlobStore(db),
		Concepts: postgres.NewConceptStore(db), Vectors: vectors, Reviews: postgres.NewConceptReviews(db),
		EmbeddingSettings: postgres.NewEmbeddingSettings(db), ConceptLinks: postgres.NewConceptLinks(db),
		ConceptMigrations: postgres.NewConceptMigrations(db),
		Invalidations:     postgres.NewInvalidations(db, cfg.DatabaseURL, lg), Ready: func(ctx context.Context) error { return db.PingContext(ctx) },
		Kind: "postgres",
	}, nil
}

// Migrate applies the SQL migrations to cfg.DatabaseURL.
func Migrate(ctx context.Context, cfg Config) error {
	_, err := MigrateApplied(ctx, cfg)
	return err
}

// MigrateApplied is Migrate that returns the names of the migrations it
// applied, none when the database was up to date (enrichd migrate prints
// them).
func MigrateApplied(ctx context.Context, cfg Config) ([]string, error) {
	if cfg.DatabaseURL == "" {
		return nil, fmt.Errorf("migrate: DATABASE_URL is empty")
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.PoolConfig{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return postgres.MigrateApplied(ctx, db.DB)
}
