// Package postgres holds the PostgreSQL repositories of the ports, on Bun with
// the pgdialect and the pgx driver (through database/sql), plus Open and the
// migrations (Migrate). Every query of tenant data is scoped by organization,
// driver errors become the ports' sentinels, and aggregate updates lock their
// row (SELECT … FOR UPDATE) for the length of the caller's closure.
//
// The stores work on native PostgreSQL 14+ and on PGlite (one query at a time,
// one session: see test/pgtest). pgvector is not needed yet.
package postgres
