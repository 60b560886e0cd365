// Command enrichd is the Entity Enrichment Service's server.
//
//	enrichd            serve HTTP on ENRICH_ADDR (default :8080, every interface;
//	                   make run sets 127.0.0.1:8080), on memory storage when
//	                   DATABASE_URL is empty
//	enrichd migrate    apply the SQL migrations to DATABASE_URL, print what it
//	                   applied, and exit
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/entityenrich/enrich"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enrichd:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	cfg, err := enrich.LoadConfig(os.Environ())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "serve":
		s, err := enrich.NewServer(ctx, cfg)
		if err != nil {
			return err
		}
		return s.ListenAndServe(ctx)
	case "migrate":
		applied, err := enrich.MigrateApplied(ctx, cfg)
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			_, err = fmt.Fprintln(out, "database is up to date: no migration to apply")
			return err
		}
		for _, name := range applied {
			if _, err := fmt.Fprintln(out, "applied", name); err != nil {
				return err
			}
		}
		_, err = fmt.Fprintf(out, "%d migrations applied\n", len(applied))
		return err
	case "help", "-h", "--help":
		_, err := fmt.Fprintln(out, "usage: enrichd [serve|migrate]\n\n  serve    serve HTTP on ENRICH_ADDR (default :8080); the default command\n  migrate  apply the SQL migrations to DATABASE_URL and print what was applied")
		return err
	}
	return fmt.Errorf("unknown command %q (want serve or migrate)", cmd)
}
