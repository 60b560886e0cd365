package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // a failed or cancelled job, an error answer, a network error
	exitUsage       = 2 // bad flags, arguments or input files
	exitInterrupted = 130
)

const defaultURL = "http://localhost:8080"

// stdio is the terminal (or pipes) a command talks to.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// usageError is a mistake in the command line or its input: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// jobError is a job that ended without a result: exit code 1.
type jobError struct {
	job, state, code, detail string
}

func (e jobError) Error() string {
	msg := fmt.Sprintf("job %s %s", e.job, e.state)
	if e.detail != "" {
		msg += ": " + e.detail
	}
	if e.code != "" {
		msg += " (code " + e.code + ")"
	}
	return msg
}

// interrupted is a follow that the user stopped, leaving the job running.
type interrupted struct{ job string }

func (e interrupted) Error() string {
	return fmt.Sprintf("stopped following; job %s is still running (enrich jobs follow %s, or enrich jobs cancel %s)", e.job, e.job, e.job)
}

// cli holds what every command shares: the streams, the global flags and
// the environment.
type cli struct {
	io     stdio
	getenv func(string) string
	intr   atomic.Pointer[chan os.Signal] // where SIGINT goes while a job is followed
	tty    atomic.Pointer[func()]         // puts the terminal back (while a password is read)

	output string
	quiet  bool
	url    string

	client    *api.Client
	session   *api.Session
	elsewhere string // the server of a stored session that was not used
}

// execute runs the command line args and returns the exit code. SIGINTs
// from sigs (nil for none) go to a command following a job, which asks what
// to do; elsewhere they end the command.
func execute(ctx context.Context, args []string, s stdio, sigs <-chan os.Signal) int {
	c := &cli{io: s, getenv: os.Getenv}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sigint atomic.Bool
	if sigs != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sig := <-sigs:
					if ch := c.intr.Load(); ch != nil {
						select {
						case *ch <- sig:
						default:
						}
						continue
					}
					sigint.Store(true)
					cancel()
					// A command blocked in a read (a prompt) does not see
					// the context: end the process, terminal restored.
					time.AfterFunc(500*time.Millisecond, func() {
						if restore := c.tty.Load(); restore != nil {
							(*restore)()
						}
						fmt.Fprintln(s.err, "\nenrich: interrupted")
						os.Exit(exitInterrupted)
					})
				}
			}
		}()
	}
	root := c.root()
	root.SetArgs(args)
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if sigint.Load() {
		fmt.Fprintln(s.err, "enrich: interrupted")
		return exitInterrupted
	}
	fmt.Fprintln(s.err, "enrich:", c.message(err))
	var ue usageError
	var ie interrupted
	switch {
	case errors.As(err, &ie):
		return exitInterrupted
	case errors.As(err, &ue), isCobraUsage(err):
		fmt.Fprintln(s.err, "Run 'enrich help' (or add --help to the command) for usage.")
		return exitUsage
	}
	return exitFailed
}

// message adds a hint to errors a newcomer meets first.
func (c *cli) message(err error) string {
	var e *api.Error
	if errors.As(err, &e) && e.Status == 401 {
		if c.elsewhere != "" {
			return err.Error() + "\n  the stored session is for " + c.elsewhere + ": log in to this server with `enrich login`, or set ENRICH_API_KEY"
		}
		return err.Error() + "\n  log in with `enrich login`, or set ENRICH_API_KEY"
	}
	return err.Error()
}

// isCobraUsage recognises cobra's own argument errors, which it returns as
// plain errors.
func isCobraUsage(err error) bool {
	var e *api.Error
	if errors.As(err, &e) {
		return false
	}
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "required flag", "invalid argument"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "enrich",
		Short: "Command-line client of the Entity Enrichment Service",
		Long: `enrich talks to an Entity Enrichment Service (enrichd).

Server and credential come from ENRICH_URL (default ` + defaultURL + `) and
ENRICH_API_KEY, or from the session that 'enrich login' stores under your
configuration directory. Output is a table on a terminal and JSON otherwise
(pipes get JSON); --output chooses.

'enrich SCHEMA_ID -d JSON' (or -f FILE) is short for 'enrich enrich SCHEMA_ID
-d JSON', with the same flags.

Exit codes: 0 success; 1 a failed or cancelled job, or an error from the
server; 2 a usage error (bad flag, argument or JSON); 130 interrupted with
the job left running.`,
		Example: `  enrichd &      # a server (in the repository: make run &, memory and sandbox models)
  enrich register --email me@example.com --organization Acme
  enrich schemas create -f company.json --name Company
  enrich enrich SCHEMA_ID -d '{"name":"Acme"}' --model sandbox::flaky
  enrich SCHEMA_ID -d '{"name":"Acme"}'      # the same, short`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch c.output {
			case "", "json", "table":
			default:
				return usagef("--output must be json or table, not %q", c.output)
			}
			return nil
		},
	}
	root.PersistentFlags().StringVarP(&c.output, "output", "o", "", "json or table (default: table on a terminal, json otherwise)")
	root.PersistentFlags().BoolVarP(&c.quiet, "quiet", "q", false, "print only ids (what a script needs next)")
	root.PersistentFlags().StringVar(&c.url, "url", "", "server URL (default: $ENRICH_URL, the session's server, or "+defaultURL+")")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "table"}, cobra.ShellCompDirectiveNoFileComp))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	root.AddGroup(&cobra.Group{ID: "main", Title: "Enrichment:"}, &cobra.Group{ID: "account", Title: "Account:"},
		&cobra.Group{ID: "ops", Title: "Operators:"}, &cobra.Group{ID: "shell", Title: "Help and shell completion:"})
	for _, sub := range []*cobra.Command{c.enrichCmd(), c.batchCmd(), c.schemasCmd(), c.jobsCmd(), c.recordsCmd(), c.optionsCmd(), c.attachmentsCmd(), c.syncCmd()} {
		sub.GroupID = "main"
		root.AddCommand(sub)
	}
	for _, sub := range []*cobra.Command{c.registerCmd(), c.loginCmd(), c.logoutCmd(), c.whoamiCmd(), c.keysCmd()} {
		sub.GroupID = "account"
		root.AddCommand(sub)
	}
	admin := c.adminCmd()
	admin.GroupID = "ops"
	root.AddCommand(admin)
	root.AddCommand(c.compatCmds()...)
	c.shortcut(root)
	// A group alone shows its help; an unknown verb after it is a usage
	// error (cobra would print the help and exit 0).
	for _, sub := range root.Commands() {
		if sub.HasSubCommands() && sub.RunE == nil {
			sub.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	root.SetHelpCommandGroupID("shell")
	root.SetCompletionCommandGroupID("shell")
	return root
}

// args wraps a cobra argument check so that its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}

// table reports whether to print tables rather than JSON.
func (c *cli) table() bool {
	if c.output != "" {
		return c.output == "table"
	}
	return isTerminal(c.io.out)
}

// api returns the client, with ENRICH_API_KEY or the stored session.
func (c *cli) api() (*api.Client, error) {
	if c.client != nil {
		return c.client, nil
	}
	base := c.url
	if base == "" {
		base = c.getenv("ENRICH_URL")
	}
	var creds api.Credentials
	if key := c.getenv("ENRICH_API_KEY"); key != "" {
		creds = api.Key(key)
	} else {
		s, err := c.loadSession()
		if err != nil {
			return nil, err
		}
		switch {
		case s == nil:
		case base == "" || strings.TrimRight(base, "/") == strings.TrimRight(s.URL, "/"):
			creds, base = s, s.URL
		default:
			c.elsewhere = s.URL
		}
	}
	if base == "" {
		base = defaultURL
	}
	c.client = api.New(base, creds)
	return c.client, nil
}

func (c *cli) loadSession() (*api.Session, error) {
	if c.session != nil {
		return c.session, nil
	}
	path, err := api.SessionPath()
	if err != nil {
		return nil, err
	}
	s, err := api.LoadSession(path)
	c.session = s
	return s, err
}

// call makes one request with the command's context.
func (c *cli) call(cmd *cobra.Command, method, path string, body, out any) error {
	cl, err := c.api()
	if err != nil {
		return err
	}
	return cl.Do(cmd.Context(), method, path, body, out)
}

// printJSON writes v (raw JSON, kept in the server's field order, or a
// value) indented.
func (c *cli) printJSON(v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			b.Reset()
			b.Write(raw)
		}
		b.WriteByte('\n')
		_, err := c.io.out.Write(b.Bytes())
		return err
	}
	enc := json.NewEncoder(c.io.out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// show prints the answer raw as JSON, its id alone with --quiet, or a table.
func (c *cli) show(raw json.RawMessage, id string, table func(*tw)) error {
	switch {
	case c.quiet:
		_, err := fmt.Fprintln(c.io.out, id)
		return err
	case c.table():
		t := newTW(c.io.out)
		table(t)
		return t.Flush()
	}
	return c.printJSON(raw)
}

// readJSONArg reads JSON from a -d value or a -f file ("-" for stdin) and
// checks that it is one JSON object: a mistake is a usage error that says
// where.
func (c *cli) readJSONArg(data, file, what string) (json.RawMessage, error) {
	raw, src, err := c.readArg(data, file, what, "'{...}'")
	if err != nil {
		return nil, err
	}
	return checkObject(raw, what, src)
}

// readArg reads what a -d (inline) or -f (a file, - for standard input)
// flag gives, and names where it came from.
func (c *cli) readArg(data, file, what, example string) ([]byte, string, error) {
	switch {
	case data != "" && file != "":
		return nil, "", usagef("give %s with -d or -f, not both", what)
	case data != "":
		return []byte(data), "-d", nil
	case file == "-":
		b, err := io.ReadAll(c.io.in)
		return b, "standard input", err
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, "", usageError{err}
		}
		return b, file, nil
	}
	return nil, "", usagef("give %s with -d %s or -f FILE", what, example)
}

func checkObject(raw []byte, what, src string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			msg := strings.TrimPrefix(se.Error(), "json: ")
			if se.Offset >= int64(len(raw)) {
				return nil, usagef("%s in %s is not valid JSON: %s (a closing bracket or quote is missing?)", what, src, msg)
			}
			line, col := position(raw, se.Offset)
			return nil, usagef("%s in %s is not valid JSON: %s at line %d, column %d", what, src, msg, line, col)
		case errors.As(err, &te):
			return nil, usagef("%s in %s must be a JSON object, not %s", what, src, te.Value)
		}
		return nil, usagef("%s in %s is not valid JSON: %v", what, src, err)
	}
	if obj == nil {
		return nil, usagef("%s in %s must be a JSON object, not null", what, src)
	}
	return json.RawMessage(raw), nil
}

// position turns a byte offset into a line and a column, from 1.
func position(raw []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off-1 && i < int64(len(raw)); i++ {
		if raw[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
