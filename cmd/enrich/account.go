package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

// credentials holds the flags of register and login.
type credentials struct {
	email, org    string
	passwordStdin bool
}

func (c *cli) registerCmd() *cobra.Command {
	var f credentials
	cmd := &cobra.Command{
		Use:   "register",
		Short: "Create an organization and its owner, and log in",
		Long: `register creates a user and a new organization owned by that user, then
stores the session like 'enrich login'. The password is asked for on a
terminal, or read from standard input with --password-stdin.`,
		Example: `  enrich register --email me@example.com --organization Acme
  echo 'a long password' | enrich register --email me@example.com --organization Acme --password-stdin`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.org == "" {
				return usagef("--organization is required")
			}
			return c.signIn(cmd, f, "/api/auth/register")
		},
	}
	cmd.Flags().StringVar(&f.email, "email", "", "your email address")
	cmd.Flags().StringVar(&f.org, "organization", "", "name of the new organization")
	cmd.Flags().BoolVar(&f.passwordStdin, "password-stdin", false, "read the password from standard input")
	return cmd
}

func (c *cli) loginCmd() *cobra.Command {
	var f credentials
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in and store the session",
		Long: `login signs in with email and password and stores the session (mode 0600)
as enrich/session.json under your configuration directory. Later commands
use it when ENRICH_API_KEY is not set, and refresh it when it expires.`,
		Example: `  enrich login --email me@example.com
  echo "$PASSWORD" | enrich login --email me@example.com --password-stdin
  ENRICH_URL=https://enrich.example.com enrich login`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.signIn(cmd, f, "/api/auth/login") },
	}
	cmd.Flags().StringVar(&f.email, "email", "", "your email address (asked for on a terminal)")
	cmd.Flags().BoolVar(&f.passwordStdin, "password-stdin", false, "read the password from standard input")
	return cmd
}

// signIn posts to register or login and stores the session.
func (c *cli) signIn(cmd *cobra.Command, f credentials, route string) error {
	in := bufio.NewReader(c.io.in)
	tty := isTerminal(c.io.in)
	if f.email == "" {
		if !tty {
			return usagef("--email is required")
		}
		fmt.Fprint(c.io.err, "Email: ")
		line, err := in.ReadString('\n')
		if err != nil {
			return usagef("no email given")
		}
		f.email = strings.TrimSpace(line)
	}
	var password string
	switch {
	case f.passwordStdin:
		b, err := io.ReadAll(in)
		if err != nil {
			return err
		}
		password = strings.TrimRight(string(b), "\r\n")
	case tty:
		fmt.Fprint(c.io.err, "Password: ")
		fd := int(c.io.in.(interface{ Fd() uintptr }).Fd())
		if st, err := term.GetState(fd); err == nil {
			restore := func() { _ = term.Restore(fd, st) }
			c.tty.Store(&restore)
			defer c.tty.Store(nil)
		}
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(c.io.err)
		if err != nil {
			return err
		}
		password = string(b)
	default:
		return usagef("no terminal to ask for the password: use --password-stdin")
	}
	if password == "" {
		return usagef("the password is empty")
	}
	base := c.url
	if base == "" {
		base = c.getenv("ENRICH_URL")
	}
	if base == "" {
		base = defaultURL
	}
	base = strings.TrimRight(base, "/")
	body := map[string]string{"email": f.email, "password": password}
	if route == "/api/auth/register" {
		body["organization"] = f.org
	}
	var t api.Tokens
	if err := api.New(base, nil).Do(cmd.Context(), http.MethodPost, route, body, &t); err != nil {
		var e *api.Error
		if errors.As(err, &e) && e.Code == "email_taken" {
			return fmt.Errorf("%w\n  the account exists: log in with `enrich login --email %s`", err, f.email)
		}
		return err
	}
	path, err := api.SessionPath()
	if err != nil {
		return err
	}
	s := api.NewSession(path, base, t)
	if err := s.Save(); err != nil {
		return fmt.Errorf("store the session: %w", err)
	}
	if c.quiet {
		return nil
	}
	fmt.Fprintf(c.io.err, "Logged in to %s as %s (%s). Session stored in %s\n", base, s.Email, s.Organization, path)
	return nil
}

func (c *cli) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "logout",
		Short:   "Revoke the stored session and forget it",
		Example: `  enrich logout`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := c.loadSession()
			if err != nil {
				return err
			}
			if s == nil {
				fmt.Fprintln(c.io.err, "Not logged in.")
				return nil
			}
			err = api.New(s.URL, nil).Do(cmd.Context(), http.MethodPost, "/api/auth/logout", map[string]string{"refresh_token": s.RefreshToken}, nil)
			var e *api.Error
			if err != nil && !(errors.As(err, &e) && e.Status == http.StatusUnauthorized) {
				return fmt.Errorf("revoke the session (it is kept; try again): %w", err)
			}
			if err := s.Delete(); err != nil {
				return err
			}
			fmt.Fprintf(c.io.err, "Logged out of %s.\n", s.URL)
			return nil
		},
	}
}

func (c *cli) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show who the current credential is",
		Long: `whoami shows the server, the credential in use (ENRICH_API_KEY or the stored
session) and what the server says about it: user, organization, role, scopes.`,
		Example: `  enrich whoami
  enrich whoami --output json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw json.RawMessage
			if err := c.call(cmd, http.MethodGet, "/api/auth/me", nil, &raw); err != nil {
				return err
			}
			var me struct {
				Kind string `json:"kind"`
				User *struct {
					Email string `json:"email"`
				} `json:"user"`
				Organization struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"organization"`
				Role      string   `json:"role"`
				Scopes    []string `json:"scopes"`
				SysAdmin  bool     `json:"is_sysadmin"`
				KeyID     *string  `json:"key_id"`
				KeyExpiry *string  `json:"key_expires_at"`
			}
			_ = json.Unmarshal(raw, &me)
			cred := "stored session"
			if _, ok := c.client.Creds.(api.Key); ok {
				cred = "ENRICH_API_KEY"
			}
			email := "-"
			if me.User != nil {
				email = me.User.Email
			}
			return c.show(raw, email, func(t *tw) {
				t.row("SERVER", c.client.BaseURL)
				t.row("CREDENTIAL", cred+" ("+me.Kind+")")
				t.row("USER", email)
				t.row("ORGANIZATION", me.Organization.Name+" ("+me.Organization.ID+")")
				t.row("ROLE", me.Role)
				t.row("SCOPES", me.Scopes)
				t.row("SYSADMIN", me.SysAdmin)
				if me.KeyID != nil {
					t.row("KEY", me.KeyID)
					t.row("KEY EXPIRES", me.KeyExpiry)
				}
			})
		},
	}
}

func (c *cli) keysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list, revoke access keys and change their role",
		Long: `keys manages the organization's access keys (ent_…). Creating an organization
key needs the owner role; a key never outranks its creator. The secret is
shown once, when the key is created.`,
		Example: `  enrich keys create --name ci --role editor
  KEY=$(enrich keys create --name ci --role editor -q)   # -q prints the secret alone
  enrich keys list
  enrich keys role KEY_ID operator
  enrich keys revoke KEY_ID`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(c.keysCreateCmd(), c.keysListCmd(), c.keysRevokeCmd(), c.keysRoleCmd())
	return cmd
}

// keyRoles are the roles an organization key can have.
var keyRoles = []string{"owner", "editor", "operator"}

// keyFlags are the flags of keys create.
type keyFlags struct {
	name, role string
	scopes     []string
	days       int
}

func (c *cli) keysCreateCmd() *cobra.Command {
	var f keyFlags
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an access key (its secret is shown once)",
		Long: `create makes an access key. With --quiet it prints only the secret, for
ENRICH_API_KEY. Without --role the key is a legacy user key that inherits
your role.`,
		Example: `  enrich keys create --name ci --role editor --expires-in-days 90
  export ENRICH_API_KEY=$(enrich keys create --name ci --role editor -q)`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.createKey(cmd, f) },
	}
	cmd.Flags().StringVar(&f.name, "name", "", "what the key is for")
	cmd.Flags().StringVar(&f.role, "role", "", "owner, editor or operator (empty: a legacy key with your role)")
	cmd.Flags().StringSliceVar(&f.scopes, "scope", nil, "read, write (default both)")
	cmd.Flags().IntVar(&f.days, "expires-in-days", 0, "expire after this many days (default never)")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions(keyRoles, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) createKey(cmd *cobra.Command, f keyFlags) error {
	if f.name == "" {
		return usagef("--name is required")
	}
	body := map[string]any{"name": f.name, "role": nil}
	if f.role != "" {
		body["role"] = f.role
	}
	if len(f.scopes) > 0 {
		body["scopes"] = f.scopes
	}
	if f.days > 0 {
		body["expires_in_days"] = f.days
	}
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodPost, "/api/auth/api-keys", body, &raw); err != nil {
		return err
	}
	var k apiKey
	_ = json.Unmarshal(raw, &k)
	return c.show(raw, k.Key, func(t *tw) {
		t.row("ID", k.ID)
		t.row("NAME", k.Name)
		t.row("ROLE", k.role())
		t.row("SCOPES", k.Scopes)
		t.row("EXPIRES", k.ExpiresAt)
		t.row("KEY", k.Key)
		t.Flush()
		fmt.Fprintln(c.io.err, "The key is shown only now: keep it somewhere safe.")
	})
}

func (c *cli) keysListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List access keys (without secrets)",
		Example: `  enrich keys list`,
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.listKeys(cmd) },
	}
}

func (c *cli) listKeys(cmd *cobra.Command) error {
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodGet, "/api/auth/api-keys", nil, &raw); err != nil {
		return err
	}
	var l struct {
		Keys []apiKey `json:"api_keys"`
	}
	_ = json.Unmarshal(raw, &l)
	if c.quiet {
		for _, k := range l.Keys {
			fmt.Fprintln(c.io.out, k.ID)
		}
		return nil
	}
	return c.show(raw, "", func(t *tw) {
		t.row("ID", "PREFIX", "NAME", "ROLE", "SCOPES", "ACTIVE", "EXPIRES", "LAST USED", "USES")
		for _, k := range l.Keys {
			t.row(k.ID, k.Prefix, k.Name, k.role(), k.Scopes, k.Active, k.ExpiresAt, k.LastUsed, k.Uses)
		}
	})
}

func (c *cli) keysRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "revoke KEY_ID",
		Short:             "Revoke an access key, at once and for good",
		Example:           `  enrich keys revoke 01jq7c4w9d0000000000000000`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: c.completeKeys,
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := c.call(cmd, http.MethodDelete, "/api/auth/api-keys/"+a[0], nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(c.io.err, "Key %s revoked.\n", a[0])
			return nil
		},
	}
}

func (c *cli) keysRoleCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "role KEY_ID ROLE",
		Short:   "Change an access key's role in place",
		Long:    `role changes an organization key's role (owner, editor, operator) without reissuing it.`,
		Example: `  enrich keys role 01jq7c4w9d0000000000000000 operator`,
		Args:    args(cobra.ExactArgs(2)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(a) == 1 {
				return keyRoles, cobra.ShellCompDirectiveNoFileComp
			}
			return c.completeKeys(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			var raw json.RawMessage
			if err := c.call(cmd, http.MethodPatch, "/api/auth/api-keys/"+a[0], map[string]string{"role": a[1]}, &raw); err != nil {
				return err
			}
			var k apiKey
			_ = json.Unmarshal(raw, &k)
			return c.show(raw, k.ID, func(t *tw) {
				t.row("ID", "NAME", "ROLE")
				t.row(k.ID, k.Name, k.role())
			})
		},
	}
}

type apiKey struct {
	ID        string   `json:"id"`
	Key       string   `json:"key"`
	Prefix    string   `json:"prefix"`
	Name      string   `json:"name"`
	Role      *string  `json:"role"`
	Scopes    []string `json:"scopes"`
	Active    bool     `json:"is_active"`
	ExpiresAt *string  `json:"expires_at"`
	LastUsed  *string  `json:"last_used_at"`
	Uses      int      `json:"use_count"`
}

func (k apiKey) role() string {
	if k.Role == nil {
		return "(legacy: user's role)"
	}
	return *k.Role
}

func (c *cli) completeKeys(cmd *cobra.Command, a []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(a) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var l struct {
		Keys []apiKey `json:"api_keys"`
	}
	if c.call(cmd, http.MethodGet, "/api/auth/api-keys", nil, &l) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, k := range l.Keys {
		if k.Active {
			out = append(out, k.ID+"\t"+k.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
