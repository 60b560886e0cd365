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
	return cmd
}

func (c *cli) sysadmin(ctx context.Context, email string, grant bool) error {
	cfg, err := enrich.LoadConfig(os.Environ())
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return usageError{errors.New("admin commands need DATABASE_URL (memory storage lives only inside a server)")}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := enrich.NewEmbedded(ctx, cfg)
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
