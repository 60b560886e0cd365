// Command enrichd is the Entity Enrichment Service's server.
//
//	enrichd            serve HTTP (on memory storage when DATABASE_URL is empty)
//	enrichd migrate    apply the SQL migrations to DATABASE_URL and exit
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/entityenrich/enrich"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "enrichd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
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
		return enrich.Migrate(ctx, cfg)
	case "help", "-h", "--help":
		fmt.Println("usage: enrichd [serve|migrate]")
		return nil
	}
	return fmt.Errorf("unknown command %q (want serve or migrate)", cmd)
}
