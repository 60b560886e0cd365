// Command enrich is the command-line client of the Entity Enrichment Service.
//
//	enrich login                          sign in; the session is stored and refreshed
//	enrich schemas create -f company.json save a JSON Schema
//	enrich enrich SCHEMA -d '{"name":"Acme"}'
//	                                      enrich an entity, with live progress
//	enrich help                           every command, with examples
//
// It talks to ENRICH_URL (default http://localhost:8080) with ENRICH_API_KEY
// or the stored session. Output is a table on a terminal and JSON otherwise
// (--output). Exit codes: 0 success, 1 a failed job or an error answer,
// 2 a usage error, 130 interrupted with the job left running.
//
// The admin commands act on the database directly (DATABASE_URL), not through
// the API: they are for operators of the server.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	// SIGINT is handled where a job is followed (ask, cancel or leave it);
	// elsewhere it ends the command.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	os.Exit(execute(context.Background(), os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, sigs))
}
