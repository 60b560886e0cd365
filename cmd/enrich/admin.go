package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/entityenrich/enrich"
)

// adminCmd holds the operator commands. They act on the database directly
// (DATABASE_URL), not through the API, so they embed the service.
func (c *cli) adminCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Operator commands on the server's database (DATABASE_URL)",
		Long: `admin commands act on the server's PostgreSQL database directly
(DATABASE_URL), not through the API: they are for operators of the server.
Memory storage lives only inside a server, so they need DATABASE_URL.`,
		Example: `  DATABASE_URL=postgres://postgres@127.0.0.1:5432/enrich enrich admin grant-sysadmin me@example.com`,
		Args:    args(cobra.NoArgs),
	}
	for _, grant := range []bool{true, false} {
		use, short := "grant-sysadmin EMAIL", "Make a user a system administrator"
		if !grant {
			use, short = "revoke-sysadmin EMAIL", "Take the system administrator flag back"
		}
		cmd.AddCommand(&cobra.Command{
			Use:     use,
			Short:   short,
			Example: "  enrich admin " + strings.Fields(use)[0] + " me@example.com",
			Args:    args(cobra.ExactArgs(1)),
			RunE: func(cmd *cobra.Command, a []string) error {
				return c.sysadmin(cmd.Context(), a[0], grant)
			},
		})
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "reencrypt",
		Short: "Seal every stored provider key again with the first encryption key",
		Long: `reencrypt seals every stored provider key again with the first key of
ENRICH_ENCRYPTION_KEYS. Put the new encryption key first, keep the old ones
after it, run reencrypt, then drop the old keys. Keys that no configured
encryption key opens are counted as failed and left as they are.`,
		Example: `  ENRICH_ENCRYPTION_KEYS=NEW,OLD DATABASE_URL=postgres://postgres@127.0.0.1:5432/enrich enrich admin reencrypt`,
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.reencrypt(cmd.Context()) },
	})
	return cmd
}

// embedded opens the server's database for an admin command.
func embedded(ctx context.Context) (*enrich.Embedded, error) {
	cfg, err := enrich.LoadConfig(os.Environ())
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" {
		return nil, usageError{errors.New("admin commands need DATABASE_URL (memory storage lives only inside a server)")}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return enrich.NewEmbedded(ctx, cfg)
}

func (c *cli) reencrypt(ctx context.Context) error {
	e, err := embedded(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	resealed, failed, err := e.ProviderKeys.Reencrypt(ctx)
	if err != nil {
		return fmt.Errorf("reencrypt: %w", err)
	}
	// Organizations' own providers' keys too (counted with the others).
	pr, pf, err := e.OrgProviders.Reencrypt(ctx)
	if err != nil {
		return fmt.Errorf("reencrypt: %w", err)
	}
	resealed, failed = resealed+pr, failed+pf
	if _, err := fmt.Fprintf(c.io.out, "resealed=%d failed=%d\n", resealed, failed); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("reencrypt: %d keys open with no configured encryption key", failed)
	}
	return nil
}

func (c *cli) sysadmin(ctx context.Context, email string, grant bool) error {
	e, err := embedded(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	u, err := e.Access.GrantSysAdmin(ctx, email, grant)
	if err != nil {
		verb := "grant-sysadmin"
		if !grant {
			verb = "revoke-sysadmin"
		}
		return fmt.Errorf("%s %s: %w", verb, email, err)
	}
	_, err = fmt.Fprintf(c.io.out, "%s is_sysadmin=%v\n", u.Email, u.SysAdmin)
	return err
}
