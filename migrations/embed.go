// Package migrations holds the SQL migrations of the PostgreSQL schema, named
// YYYYMMDDHHMMSS_name.[tx.]up.sql for bun/migrate, and embeds them so that the
// binaries carry them. Only the postgres adapter reads them.
package migrations

import "embed"

// FS holds every migration file. It lives here, beside the files, because
// go:embed cannot reach a parent directory.
//
//go:embed *.sql
var FS embed.FS
