package readme_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/test/serve"
)

// marker precedes a walk-through's fenced block in README.md:
// <!-- walkthrough: NAME ... -->.
var marker = regexp.MustCompile(`^<!-- walkthrough: (\w+)`)

// walkthroughs returns README.md's marked blocks by name.
func walkthroughs(t *testing.T) (map[string]string, string) {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	var name string
	var in bool
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && name == "":
			if m := marker.FindStringSubmatch(line); m != nil {
				name = m[1]
			}
		case !in && strings.HasPrefix(line, "```"):
			in = true
			body.Reset()
		case !in && strings.TrimSpace(line) != "":
			t.Fatalf("README.md: walk-through %q: its marker must be followed by a fenced block", name)
		case in && strings.HasPrefix(line, "```"):
			blocks[name] = body.String()
			in, name = false, ""
		case in:
			body.WriteString(line + "\n")
		}
	}
	return blocks, string(raw)
}

func TestREADMERules(t *testing.T) {
	blocks, doc := walkthroughs(t)
	tests := []struct {
		name string
		bad  *regexp.Regexp
		in   string
	}{
		{"no link out of the repository", regexp.MustCompile(`\]\((\.\./|/|[a-z]+://)[^)]*\)`), doc},
		{"no path out of the repository", regexp.MustCompile("`\\.\\./[^`]*`"), doc},
		{"no DSN naming the test database", regexp.MustCompile(`postgres(ql)?://[^\s` + "`" + `]*/test\b`), doc},
		{"no placeholder in the curl walk-through", regexp.MustCompile(`<[a-z_]+>`), blocks["curl"]},
		{"no placeholder in the CLI walk-through", regexp.MustCompile(`<[a-z_]+>`), blocks["cli"]},
		{"streams with curl -sN", regexp.MustCompile(`curl -N\b|curl [^|\n]*-N\b`), strings.ReplaceAll(blocks["curl"], "curl -sN", "")},
		{"no jq", regexp.MustCompile(`\bjq\b`), blocks["curl"] + blocks["cli"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in == "" {
				t.Fatal("README.md has no such walk-through")
			}
			if m := tt.bad.FindString(tt.in); m != "" {
				t.Errorf("README.md holds %q", m)
			}
		})
	}
}

// TestWalkthroughsRunTwice runs each marked block with bash, as a reader
// pasting it would, twice against one server: the second run must work
// too, with the account that the first made.
func TestWalkthroughsRunTwice(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "grep", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walk-throughs need %s, which is not installed", tool)
		}
	}
	blocks, _ := walkthroughs(t)
	bin := t.TempDir()
	gobin := "go" // go test puts its own GOROOT/bin first in PATH
	if out, err := exec.Command(gobin, "build", "-o", filepath.Join(bin, "enrich"), "github.com/entityenrich/enrich/cmd/enrich").CombinedOutput(); err != nil {
		t.Fatalf("build enrich: %v\n%s", err, out)
	}
	tests := []struct {
		block string
		want  []string // in every run's output
	}{
		{"curl", []string{`"event":"attempt"`, `"reason":"model_output_invalid`, `"event":"completed"`, `"structured_output":{`}},
		{"generate", []string{`"ok":true`, `"event":"attempt"`, `"reason":"model_output_invalid`, `"event":"completed"`,
			`"schema_generation"`, `"founded_year":{`, `"code":"sample_commonality_failed"`}},
		{"cli", []string{`"email": "me@example.com"`, `"event": "completed"`, `"structured_output": {`, `"name": "Initech"`, `"name": "Globex"`}},
		{"attach", []string{`"chief_executive":"Dr. Lena Hoffmann."`, `"employees":"240 at the end of 2024."`,
			`"attachments":[{`, "same bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.block, func(t *testing.T) {
			script := blocks[tt.block]
			if script == "" {
				t.Fatalf("README.md has no walk-through %q", tt.block)
			}
			url := startServer(t)
			home := t.TempDir()
			// The walk-throughs run from the repository's root: the files
			// they name are there.
			copyTestdata(t, home)
			for run := 1; run <= 2; run++ {
				is := is.New(t)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				// errexit and pipefail make any failed step fail the run,
				// including a capture that finds no value; xtrace says
				// which step it was.
				cmd := exec.CommandContext(ctx, "bash", "-euxo", "pipefail", "-c", script)
				cmd.Dir = home
				cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
					"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "ENRICH_URL=" + url, "LANG=C.UTF-8", "PS4=+ README: "}
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				cancel()
				if err != nil {
					t.Fatalf("run %d of the %s walk-through failed: %v\nstdout:\n%s\nstderr (steps):\n%s", run, tt.block, err, out, stderr.String())
				}
				for _, w := range tt.want {
					if !strings.Contains(string(out), w) {
						t.Errorf("run %d of the %s walk-through does not show %s:\n%s", run, tt.block, w, out)
					}
				}
				is.True(!strings.Contains(string(out), `"code":"unauthenticated"`)) // every step was signed in
			}
		})
	}
}

// startServer starts enrichd on memory with the sandbox models on a
// loopback port, as make run does, and returns its URL.
func startServer(t *testing.T) string {
	t.Helper()
	return serve.Sandbox(t, enrich.Config{})
}

// copyTestdata copies the repository's test/testdata into dir, as the
// walk-throughs find it from the repository's root.
func copyTestdata(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join("..", "testdata")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "test", "testdata")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
