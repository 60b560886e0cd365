//go:build wireinject

package enrich

import (
	"context"

	"github.com/google/wire"

	"github.com/entityenrich/enrich/adapters/httpapi"
)

// initMemory builds the service on memory adapters.
func initMemory(ctx context.Context, cfg Config) (*Embedded, func(), error) {
	wire.Build(memorySet, coreSet)
	return nil, nil, nil
}

// initPostgres builds the service on PostgreSQL, migrating it first.
func initPostgres(ctx context.Context, cfg Config) (*Embedded, func(), error) {
	wire.Build(postgresSet, coreSet)
	return nil, nil, nil
}

// initWithStores builds the service on caller-supplied stores.
func initWithStores(ctx context.Context, cfg Config, st *Stores) (*Embedded, func(), error) {
	wire.Build(coreSet)
	return nil, nil, nil
}

// initHTTP builds the HTTP API around an Embedded core.
func initHTTP(e *Embedded) (*httpapi.Server, error) {
	wire.Build(httpSet)
	return nil, nil
}
