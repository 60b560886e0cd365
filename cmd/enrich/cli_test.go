package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/matryer/is"
	"github.com/spf13/cobra"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/test/pgtest"
	"github.com/entityenrich/enrich/test/serve"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// bin is the enrich binary built for these tests, run as a user would.
var bin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "enrich-cli-test")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "enrich")
	gobin := "go" // go test puts its own GOROOT/bin first in PATH
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("build enrich: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	pgtest.StopPGlite()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is an enrichd on memory with the sandbox models, on a loopback
// port, like test/e2e's.
type server struct {
	url, key, schema string
}

func startServer(t *testing.T, cfg enrich.Config) *server {
	t.Helper()
	return &server{url: serve.Sandbox(t, cfg)}
}

// user is a person at a shell: a home of their own (for the session), the
// server's URL and maybe a key in the environment.
type user struct {
	t    *testing.T
	home string
	env  []string
	dir  string // the working directory ("": the test's)
}

func newUser(t *testing.T, s *server) *user {
	home := t.TempDir()
	return &user{t: t, home: home, env: []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH"),
		"ENRICH_URL=" + s.url, "TERM=xterm",
	}}
}

// result is a finished run of the binary.
type result struct {
	code        int
	out, errOut string
}

// run runs enrich with args, stdin from in, stdout and stderr as pipes.
func (u *user) run(in string, args ...string) result {
	u.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = u.env
	cmd.Dir = u.dir
	cmd.Stdin = strings.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		u.t.Fatalf("run enrich %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), out: out.String(), errOut: errOut.String()}
}

// ok runs enrich and fails the test unless it exits 0.
func (u *user) ok(in string, args ...string) string {
	u.t.Helper()
	r := u.run(in, args...)
	if r.code != 0 {
		u.t.Fatalf("enrich %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.errOut)
	}
	return r.out
}

// signUp registers a user, creates a schema with one expertise domain
// (scalars only) and returns the user logged in.
func signUp(t *testing.T, s *server, email string) *user {
	t.Helper()
	u := newUser(t, s)
	u.ok("a long password\n", "register", "--email", email, "--organization", "Acme", "--password-stdin")
	s.schema = strings.TrimSpace(u.ok(`{"type":"object","properties":{"name":{"type":"string"},"industry":{"type":"string"}}}`,
		"schemas", "create", "--name", "Company", "-f", "-", "-q"))
	if s.schema == "" {
		t.Fatal("no schema id")
	}
	return u
}

func TestHelpForEveryCommand(t *testing.T) {
	c := &cli{io: stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard}, getenv: os.Getenv}
	var paths [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		if cmd.Hidden {
			return
		}
		paths = append(paths, path)
		for _, sub := range cmd.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	root := c.root()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands found", len(paths))
	}
	u := newUser(t, &server{url: "http://127.0.0.1:1"})
	for _, path := range paths {
		t.Run(strings.Join(append([]string{"enrich"}, path...), " "), func(t *testing.T) {
			is := is.New(t)
			forms := [][]string{append(append([]string(nil), path...), "--help"), append(append([]string(nil), path...), "-h"),
				append([]string{"help"}, path...)}
			var first string
			for _, args := range forms {
				r := u.run("", args...)
				is.Equal(r.code, 0)    // help exits 0
				is.Equal(r.errOut, "") // nothing on stderr
				is.True(strings.Contains(r.out, "Usage:"))
				if first == "" {
					first = r.out
				}
				is.Equal(r.out, first) // --help, -h and help agree
			}
			if len(path) == 0 || path[0] != "help" && path[0] != "completion" {
				is.True(strings.Contains(first, "Examples:")) // every command shows examples
			}
		})
	}
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := u.run("", "completion", sh)
		if r.code != 0 || !strings.Contains(r.out, "enrich") {
			t.Errorf("completion %s: exit %d, %d bytes", sh, r.code, len(r.out))
		}
	}
}

func TestUsageErrors(t *testing.T) {
	u := newUser(t, &server{url: "http://127.0.0.1:1"})
	tests := []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"unbalanced JSON", []string{"enrich", "S", "-d", `{"name":"Acme"`}, "the entity in -d is not valid JSON: unexpected end of JSON input (a closing bracket or quote is missing?)"},
		{"bad JSON token", []string{"enrich", "S", "-d", `{name: "Acme"}`}, "the entity in -d is not valid JSON: invalid character 'n' looking for beginning of object key string at line 1, column 2"},
		{"JSON not an object", []string{"enrich", "S", "-d", `["Acme"]`}, "the entity in -d must be a JSON object, not array"},
		{"JSON null", []string{"enrich", "S", "-d", `null`}, "must be a JSON object, not null"},
		{"no entity", []string{"enrich", "S"}, "give the entity with -d '{...}' or -f FILE"},
		{"both entity forms", []string{"enrich", "S", "-d", "{}", "-f", "x.json"}, "not both"},
		{"missing file", []string{"enrich", "S", "-f", "/nonexistent/entity.json"}, "no such file or directory"},
		{"old run with bad JSON", []string{"run", "S", `{"a":`}, "the entity in the JSON argument is not valid JSON"},
		{"unknown command", []string{"enrichh"}, `unknown command "enrichh" for "enrich"`},
		{"unknown command with a suggestion", []string{"shemas"}, "Did you mean this?\n\tschemas"},
		{"shortcut with bad JSON", []string{"S", "-d", `{"a"}`}, "the entity in -d is not valid JSON"},
		{"unknown flag", []string{"schemas", "list", "--nope"}, "unknown flag: --nope"},
		{"bad output", []string{"schemas", "list", "-o", "yaml"}, `--output must be json or table, not "yaml"`},
		{"missing argument", []string{"records", "get"}, "accepts 1 arg(s), received 0"},
		{"extra argument", []string{"whoami", "me"}, `unknown command "me" for "enrich whoami"`},
		{"unknown verb", []string{"keys", "rotate"}, `unknown command "rotate" for "enrich keys"`},
		{"verb that does not exist yet", []string{"schemas", "delete", "S"}, `unknown command "delete" for "enrich schemas"`},
		{"no password", []string{"login", "--email", "me@example.com"}, "no terminal to ask for the password: use --password-stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := u.run("", tt.args...)
			is.Equal(r.code, 2) // usage errors exit 2
			if !strings.Contains(r.errOut, tt.want) {
				t.Errorf("stderr %q does not say %q", r.errOut, tt.want)
			}
			is.True(!regexp.MustCompile(`(^|\s)json: `).MatchString(r.errOut)) // no Go internals
			is.True(!strings.Contains(r.errOut, "panic"))
		})
	}
}

func TestOutputs(t *testing.T) {
	s := startServer(t, enrich.Config{})
	u := signUp(t, s, "out@example.com")
	is := is.New(t)

	// Pipes get JSON, -o table a table, -q the ids alone.
	var list struct {
		Schemas []struct{ ID, Name string } `json:"schemas"`
	}
	is.NoErr(json.Unmarshal([]byte(u.ok("", "schemas", "list")), &list))
	is.Equal(len(list.Schemas), 1)
	is.Equal(list.Schemas[0].ID, s.schema)
	table := u.ok("", "schemas", "list", "-o", "table")
	is.True(regexp.MustCompile(`(?m)^ID\s+NAME\s+PROPERTIES\s+CREATED\n` + s.schema + `\s+Company\s+2\s`).MatchString(table))
	is.Equal(u.ok("", "schemas", "-q"), s.schema+"\n") // "schemas" alone lists

	// An API key from the session works in the environment, without the session.
	key := strings.TrimSpace(u.ok("", "keys", "create", "--name", "ci", "--role", "editor", "-q"))
	is.True(strings.HasPrefix(key, "ent_"))
	k := newUser(t, s)
	k.env = append(k.env, "ENRICH_API_KEY="+key)
	is.True(strings.Contains(k.ok("", "whoami", "-o", "table"), "ENRICH_API_KEY (api_key)"))
	keyID := strings.TrimSpace(u.ok("", "keys", "list", "-q"))
	is.True(regexp.MustCompile(`(?m)^` + keyID + `\s+ent_\S+\s+ci\s+editor\s+read,write\s+true\s`).MatchString(u.ok("", "keys", "list", "-o", "table")))
	is.True(strings.Contains(u.ok("", "keys", "role", keyID, "operator"), `"role": "operator"`))
	r := k.run("", "schemas", "create", "--name", "X", "-f", "-")
	is.Equal(r.code, 2) // empty input is no JSON
	r = k.run(`{"type":"object","properties":{"a":{"type":"string"}}}`, "schemas", "create", "--name", "X", "-f", "-")
	is.Equal(r.code, 1) // an operator may not create schemas
	is.True(strings.Contains(r.errOut, "HTTP 403"))
	u.ok("", "keys", "role", keyID, "editor")
	is.True(strings.Contains(k.ok("", "options", "-o", "table"), "sandbox::flaky"))

	// Enrich without a terminal: the completed event as JSON, then -q gives the record id.
	var done struct {
		Event    string         `json:"event"`
		RecordID string         `json:"record_id"`
		Result   map[string]any `json:"result"`
	}
	is.NoErr(json.Unmarshal([]byte(k.ok("", "enrich", s.schema, "-d", `{"name":"Acme"}`, "--model", "sandbox::echo")), &done))
	is.Equal(done.Event, "completed")
	is.Equal(done.Result["name"], "Acme")
	rec := strings.TrimSpace(k.ok("", s.schema, "-d", `{"name":"Beta"}`, "-m", "sandbox::flaky", "-q")) // the shortcut
	is.True(rec != "" && rec != done.RecordID)
	got := k.ok("", "records", "get", rec, "-o", "table")
	is.True(regexp.MustCompile(`(?m)^entity\.name\s+Beta$`).MatchString(got))
	is.True(regexp.MustCompile(`(?m)^output\.name\s+Beta$`).MatchString(got))

	// --events: one JSON line per event, the retry among them.
	events := k.ok("", "enrich", s.schema, "-d", `{"name":"Gamma"}`, "-m", "sandbox::flaky", "--events")
	lines := strings.Split(strings.TrimSpace(events), "\n")
	var names []string
	for _, l := range lines {
		var e struct {
			Event  string `json:"event"`
			Reason string `json:"reason"`
		}
		is.NoErr(json.Unmarshal([]byte(l), &e))
		if e.Reason != "" {
			e.Event += "(retry)"
		}
		names = append(names, e.Event)
	}
	is.True(strings.Contains(strings.Join(names, " "), "attempt attempt(retry) expertise_completed"))
	is.Equal(names[len(names)-1], "completed")

	// --follow=false starts the job; jobs follow picks it up.
	job := strings.TrimSpace(k.ok("", "enrich", s.schema, "-d", `{"name":"Delta"}`, "--follow=false", "-q"))
	is.True(job != "")
	is.True(strings.Contains(k.ok("", "jobs", "follow", job, "-o", "table"), "Delta"))
	r = k.run("", "jobs", "cancel", job)
	is.Equal(r.code, 1) // a finished job cannot be cancelled
	is.True(strings.Contains(r.errOut, "(code job_not_cancellable, HTTP 409)"))

	// export: every record, full, one per line.
	export := strings.Split(strings.TrimSpace(k.ok("", "records", "export")), "\n")
	is.Equal(len(export), 4)
	for _, l := range export {
		var full struct {
			ID     string         `json:"id"`
			Output map[string]any `json:"structured_output"`
		}
		is.NoErr(json.Unmarshal([]byte(l), &full))
		is.True(full.Output["name"] != nil)
	}
	is.Equal(k.ok("", "records", "export", "--page-size", "1"), strings.Join(export, "\n")+"\n") // the cursor, page by page
	is.Equal(strings.TrimSpace(k.ok("", "records", "list", "--job", job, "-q")), strings.TrimSpace(k.ok("", "records", "list", "-q", "--page-size", "1")))

	// Errors show the server's detail and code, and exit 1.
	r = k.run("", "records", "get", "nope")
	is.Equal(r.code, 1)
	is.True(strings.Contains(r.errOut, "(code not_found, HTTP 404)"))
	r = k.run("", "enrich", s.schema, "-d", `{"name":"X"}`, "-m", "sandbox::broken")
	is.Equal(r.code, 1) // a failed job exits 1
	is.True(strings.Contains(r.errOut, "failed"))
	is.True(strings.Contains(r.errOut, "(code model_output_invalid)"))

	// A batch: the summary of every entity, fused over two models; a bad
	// entities argument is a usage error.
	var batch struct {
		Event  string `json:"event"`
		Result struct {
			CompletedEntities int      `json:"completed_entities"`
			RecordIDs         []string `json:"record_ids"`
		} `json:"result"`
	}
	is.NoErr(json.Unmarshal([]byte(u.ok("", "batch", s.schema, "-d", `[{"name":"Acme"},{"name":"Globex"}]`, "-m", "sandbox::echo,sandbox::alt")), &batch))
	is.Equal(batch.Event, "completed")
	is.Equal(batch.Result.CompletedEntities, 2)
	is.Equal(len(batch.Result.RecordIDs), 6) // per entity: two models and their fusion
	is.Equal(u.run("", "batch", s.schema, "-d", `{"name":"Acme"}`).code, 2)
	jobID := strings.TrimSpace(u.ok("", "batch", s.schema, "-d", `[{"name":"Acme"}]`, "--follow=false", "-q"))
	is.True(jobID != "")

	// A revoked key stops working at once.
	u.ok("", "keys", "revoke", keyID)
	r = k.run("", "whoami")
	is.Equal(r.code, 1)
	is.True(strings.Contains(r.errOut, "HTTP 401"))

}

// TestVerbs covers what TestOutputs leaves out of the schemas, keys and
// records verbs: where a schema's name comes from, the tables, and the
// flags that shape a key.
func TestVerbs(t *testing.T) {
	s := startServer(t, enrich.Config{})
	u := signUp(t, s, "verbs@example.com")
	is := is.New(t)
	doc := `{"type":"object","properties":{"a":{"type":"string"}}}`
	nameOf := func(id string) string {
		var got struct{ Name string }
		is.NoErr(json.Unmarshal([]byte(u.ok("", "schemas", "get", id)), &got))
		return got.Name
	}

	// The name is --name, else the title, else the file's base name.
	file := filepath.Join(t.TempDir(), "people.json")
	is.NoErr(os.WriteFile(file, []byte(doc), 0o600))
	is.Equal(nameOf(strings.TrimSpace(u.ok("", "schemas", "create", "-f", file, "-q"))), "people")
	is.Equal(nameOf(strings.TrimSpace(u.ok(`{"title":"Titled","type":"object","properties":{"a":{"type":"string"}}}`, "schemas", "create", "-f", "-", "-q"))), "Titled")
	is.Equal(nameOf(strings.TrimSpace(u.ok(`{"title":"Titled","type":"object","properties":{"a":{"type":"string"}}}`, "schemas", "create", "-f", "-", "--name", "Named", "-q"))), "Named")
	r := u.run(doc, "schemas", "create", "-f", "-")
	is.Equal(r.code, 2) // standard input without a title needs --name
	is.True(strings.Contains(r.errOut, "--name is required"))

	// schemas generate follows the job; --save keeps the schema, whose id
	// the result gives.
	var gen struct {
		Event  string `json:"event"`
		Result struct {
			SchemaID string         `json:"schema_id"`
			Schema   map[string]any `json:"schema"`
		} `json:"result"`
	}
	is.NoErr(json.Unmarshal([]byte(u.ok("", "schemas", "generate", "-d", `[{"name":"Acme","founded":1990},{"name":"Globex","founded":1989}]`, "-m", "sandbox::echo", "--save")), &gen))
	is.Equal(gen.Event, "completed")
	is.True(gen.Result.Schema["properties"] != nil)
	is.True(strings.Contains(u.ok("", "schemas", "list", "-q"), gen.Result.SchemaID+"\n"))
	is.Equal(u.run("", "schemas", "generate", "-d", `[]`).code, 2) // no sample

	// schemas get as a table: the fields, then the document.
	got := u.ok("", "schemas", "get", s.schema, "-o", "table")
	is.True(regexp.MustCompile(`(?m)^NAME\s+Company$`).MatchString(got))
	is.True(regexp.MustCompile(`(?m)^PROPERTIES\s+2$`).MatchString(got))
	is.True(strings.Contains(got, `"industry": {`))

	// keys create with scopes and an expiry, as a table; the secret is
	// shown once, with a warning.
	r = u.run("", "keys", "create", "--name", "ro", "--role", "operator", "--scope", "read", "--expires-in-days", "30", "-o", "table")
	is.Equal(r.code, 0)
	is.True(regexp.MustCompile(`(?m)^SCOPES\s+read$`).MatchString(r.out))
	is.True(regexp.MustCompile(`(?m)^EXPIRES\s+\d{4}-\d\d-\d\dT`).MatchString(r.out))
	is.True(regexp.MustCompile(`(?m)^KEY\s+ent_`).MatchString(r.out))
	is.True(strings.Contains(r.errOut, "shown only now"))
	is.Equal(u.run("", "keys", "create").code, 2) // --name is required
	is.True(strings.Contains(u.ok("", "__complete", "keys", "role", "KEY_ID", ""), "operator\n"))

	// records list as a table says how to get the next page.
	for _, name := range []string{"Acme", "Beta"} {
		u.ok("", "enrich", s.schema, "-d", `{"name":"`+name+`"}`, "-m", "sandbox::echo", "-q")
	}
	r = u.run("", "records", "list", "-o", "table", "--page-size", "1")
	is.Equal(r.code, 0)
	is.True(regexp.MustCompile(`(?m)^ID\s+SCHEMA\s+JOB\s+MODEL\s+STRATEGY\s+COST\s+CREATED\n\S+\s+` + s.schema + `\s`).MatchString(r.out))
	is.True(strings.HasPrefix(r.errOut, "more: --cursor "))
}

// waitExpired polls the server with the access token of a stored session
// until the server refuses it, for at most 10 s.
func waitExpired(t *testing.T, s *server, session []byte) {
	t.Helper()
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(session, &sess); err != nil || sess.AccessToken == "" {
		t.Fatalf("no access token in the session: %v", err)
	}
	req, err := http.NewRequest("GET", s.url+"/api/auth/me", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+sess.AccessToken)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the access token was still accepted 10 s later (HTTP %d)", resp.StatusCode)
		}
	}
}

func TestSession(t *testing.T) {
	s := startServer(t, enrich.Config{AccessTokenTTL: 2 * time.Second})
	u := signUp(t, s, "sess@example.com")
	is := is.New(t)
	path := filepath.Join(u.home, ".config", "enrich", "session.json")
	st, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(st.Mode().Perm(), os.FileMode(0o600)) // the session is private
	before, _ := os.ReadFile(path)

	waitExpired(t, s, before) // the access token expires
	is.True(strings.Contains(u.ok("", "whoami", "-o", "table"), "sess@example.com"))
	after, _ := os.ReadFile(path)
	is.True(!bytes.Equal(before, after)) // refreshed and stored

	// The second registration says how to log in; login works.
	r := u.run("a long password\n", "register", "--email", "sess@example.com", "--organization", "Acme", "--password-stdin")
	is.Equal(r.code, 1)
	is.True(strings.Contains(r.errOut, "log in with `enrich login --email sess@example.com`"))
	r = u.run("wrong password\n", "login", "--email", "sess@example.com", "--password-stdin")
	is.Equal(r.code, 1)
	is.True(strings.Contains(r.errOut, "HTTP 401"))
	u.ok("a long password\n", "login", "--email", "sess@example.com", "--password-stdin")

	other := *u
	other.env = append(append([]string(nil), u.env...), "ENRICH_URL=http://127.0.0.1:1")
	r = other.run("", "whoami")
	is.Equal(r.code, 1) // no server there, and the session is not sent to it
	is.True(strings.Contains(r.errOut, "cannot reach http://127.0.0.1:1"))

	u.ok("", "logout")
	_, err = os.Stat(path)
	is.True(errors.Is(err, os.ErrNotExist))
	r = u.run("", "whoami")
	is.Equal(r.code, 1)
	is.True(strings.Contains(r.errOut, "log in with `enrich login`, or set ENRICH_API_KEY"))
}

func TestLoginOnTerminal(t *testing.T) {
	s := startServer(t, enrich.Config{})
	signUp(t, s, "tty-login@example.com")
	u := newUser(t, s)
	is := is.New(t)
	term := u.onTerminal("login")
	term.waitFor("Email: ")
	_, err := term.pty.Write([]byte("tty-login@example.com\r"))
	is.NoErr(err)
	term.waitFor("Password: ")
	term.waitForNoEcho() // the prompt is written just before echo is turned off
	_, err = term.pty.Write([]byte("a long password\r"))
	is.NoErr(err)
	is.Equal(term.exit(), 0)
	is.True(!strings.Contains(term.screen(), "a long password")) // not echoed
	is.True(strings.Contains(term.screen(), "Logged in to "+s.url+" as tty-login@example.com (Acme)"))
	is.True(strings.Contains(u.ok("", "whoami"), `"email": "tty-login@example.com"`))
}

func TestInterruptAtThePasswordPrompt(t *testing.T) {
	is := is.New(t)
	u := newUser(t, &server{url: "http://127.0.0.1:1"})
	term := u.onTerminal("login", "--email", "me@example.com")
	term.waitFor("Password: ")
	_, err := term.pty.Write([]byte{3})
	is.NoErr(err)
	is.Equal(term.exit(), 130) // not stuck in the read
	is.True(strings.Contains(term.screen(), "interrupted"))
}

// terminal is enrich running on a pseudo-terminal.
type terminal struct {
	t    *testing.T
	pty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	read chan struct{}
}

func (u *user) onTerminal(args ...string) *terminal {
	u.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = u.env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		u.t.Fatal(err)
	}
	term := &terminal{t: u.t, pty: f, cmd: cmd, read: make(chan struct{})}
	go func() {
		defer close(term.read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	u.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return term
}

// waitFor waits until the screen shows s.
func (term *terminal) waitFor(s string) {
	term.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		term.mu.Lock()
		found := strings.Contains(term.out.String(), s)
		term.mu.Unlock()
		if found {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	term.t.Fatalf("the terminal never showed %q; it shows:\n%s", s, term.screen())
}

// waitForNoEcho waits until the terminal no longer echoes what is typed:
// text sent before that would show on the screen whatever the program does.
func (term *terminal) waitForNoEcho() {
	term.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		on, err := echoing(term.pty)
		if err != nil {
			term.t.Fatalf("read the terminal's settings: %v", err)
		}
		if !on {
			return
		}
	}
	term.t.Fatalf("the terminal still echoes; it shows:\n%s", term.screen())
}

// exit waits for the program's end and returns its exit code.
func (term *terminal) exit() int {
	term.t.Helper()
	<-term.read // the output, to its end
	err := term.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		term.t.Fatal(err)
	}
	return term.cmd.ProcessState.ExitCode()
}

func (term *terminal) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

var (
	ansi    = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	ids     = regexp.MustCompile(`\b[0-9a-z]{26}\b|\b[0-9a-f]{32}\b`)
	numbers = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|µs)\b`)
)

// frames turns a terminal's output into the lines it showed, one per
// redraw, with escape sequences, ids and times replaced: what a screenshot
// would show, frame by frame.
func frames(raw string) string {
	raw = ansi.ReplaceAllString(raw, "")
	raw = ids.ReplaceAllString(raw, "<id>")
	raw = numbers.ReplaceAllString(raw, "<time>")
	var out []string
	for _, l := range regexp.MustCompile(`\r\n|\r|\n`).Split(raw, -1) {
		l = strings.TrimRight(l, " ")
		if l == "" || len(out) > 0 && out[len(out)-1] == l {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestProgressOnTerminal(t *testing.T) {
	s := startServer(t, enrich.Config{})
	u := signUp(t, s, "tty@example.com")
	is := is.New(t)
	term := u.onTerminal("enrich", s.schema, "-d", `{"name":"Acme"}`, "--model", "sandbox::flaky", "--strategy", "multi_expertise")
	is.Equal(term.exit(), 0)
	screen := frames(term.screen())
	golden(t, "progress_flaky.golden", screen)
	// The retry shows inline in the bar and stays above it.
	is.True(strings.Contains(screen, "sandbox::flaky · general · attempt 2/5 ↻ retry"))
	is.True(regexp.MustCompile(`(?m)^↻ sandbox::flaky · general: retry 2/5: `).MatchString(screen))
	is.True(strings.Contains(screen, "✓ sandbox::flaky · general after 2 attempts"))
	// A table on a terminal.
	is.True(regexp.MustCompile(`(?m)^name\s+Acme$`).MatchString(screen))
}

func TestInterrupt(t *testing.T) {
	s := startServer(t, enrich.Config{})
	u := signUp(t, s, "intr@example.com")
	key := strings.TrimSpace(u.ok("", "keys", "create", "--name", "t", "--role", "editor", "-q"))
	slow := []string{"enrich", s.schema, "-d", `{"name":"Acme"}`, "--model", "sandbox::slow", "--strategy", "multi_expertise"}
	jobID := regexp.MustCompile(`job ([0-9a-z]{26})`)

	t.Run("cancel", func(t *testing.T) {
		is := is.New(t)
		term := u.onTerminal(slow...)
		term.waitFor("sandbox::slow · general · attempt 1/5")
		_, err := term.pty.Write([]byte{3}) // Ctrl-C
		is.NoErr(err)
		term.waitFor("Cancel job")
		_, err = term.pty.Write([]byte("y\r"))
		is.NoErr(err)
		is.Equal(term.exit(), 1) // a cancelled job exits 1
		is.True(strings.Contains(term.screen(), "cancelled"))
	})
	t.Run("leave running", func(t *testing.T) {
		is := is.New(t)
		term := u.onTerminal(slow...)
		term.waitFor("sandbox::slow · general · attempt 1/5")
		_, err := term.pty.Write([]byte{3})
		is.NoErr(err)
		term.waitFor("Cancel job")
		_, err = term.pty.Write([]byte("n\r"))
		is.NoErr(err)
		is.Equal(term.exit(), 130)
		screen := term.screen()
		is.True(strings.Contains(screen, "is still running (enrich jobs follow "))
		// The job goes on to complete.
		m := jobID.FindStringSubmatch(screen)
		is.True(m != nil)
		k := newUser(t, s)
		k.env = append(k.env, "ENRICH_API_KEY="+key)
		is.True(strings.Contains(k.ok("", "jobs", "follow", m[1], "-o", "table"), "Acme"))
	})
	t.Run("second Ctrl-C leaves it running", func(t *testing.T) {
		is := is.New(t)
		term := u.onTerminal(slow...)
		term.waitFor("sandbox::slow · general · attempt 1/5")
		_, err := term.pty.Write([]byte{3})
		is.NoErr(err)
		term.waitFor("Cancel job")
		_, err = term.pty.Write([]byte{3})
		is.NoErr(err)
		is.Equal(term.exit(), 130)
		is.True(strings.Contains(term.screen(), "is still running"))
	})
	t.Run("no terminal", func(t *testing.T) {
		is := is.New(t)
		cmd := exec.Command(bin, slow...)
		cmd.Env = u.env
		var out, errOut syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		is.NoErr(cmd.Start())
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(errOut.String(), "job "); {
			if time.Now().After(deadline) {
				t.Fatalf("no job started: %s", errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		is.NoErr(cmd.Process.Signal(syscall.SIGINT))
		err := cmd.Wait()
		var ee *exec.ExitError
		is.True(errors.As(err, &ee))
		is.Equal(ee.ExitCode(), 130) // left running, no question asked
		is.True(strings.Contains(errOut.String(), "is still running (enrich jobs follow "))
		is.True(!strings.Contains(errOut.String(), "Cancel job"))
	})
}

// syncBuffer is a bytes.Buffer safe for the copying goroutines of exec.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
