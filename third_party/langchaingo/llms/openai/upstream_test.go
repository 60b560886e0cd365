package openai

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	upstreamModule = "github.com/tmc/langchaingo"
	upstreamClient = `"github.com/tmc/langchaingo/llms/openai/internal/openaiclient"`
	ownClient      = `"github.com/entityenrich/enrich/third_party/langchaingo/llms/openai/internal/openaiclient"`
)

// patches are this copy's changes, by file: the upstream text and ours.
var patches = map[string][][2]string{
	"openaillm.go": {{
		`// getModelCapabilities returns the capabilities for a given model
func getModelCapabilities(model string) ModelCapability {
	for _, cap := range modelCapabilities {
		if matched, _ := regexp.MatchString(cap.Pattern, model); matched {
			return cap
		}
	}
`,
		`// modelPatterns are modelCapabilities' patterns, compiled once. (enrich's
// patch: upstream compiled each with regexp.MatchString on every call.)
var modelPatterns = func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(modelCapabilities))
	for i, cap := range modelCapabilities {
		res[i] = regexp.MustCompile(cap.Pattern)
	}
	return res
}()

// getModelCapabilities returns the capabilities for a given model
func getModelCapabilities(model string) ModelCapability {
	for i, cap := range modelCapabilities {
		if modelPatterns[i].MatchString(model) {
			return cap
		}
	}
`,
	}},
	"internal/openaiclient/chat.go": {{
		`	payloadBytes, err := json.Marshal(payload)
`,
		`	// enrich's patch: marshalChat, MarshalJSON's bytes, where upstream
	// called json.Marshal(payload), which also re-reads and compacts what
	// MarshalJSON wrote.
	payloadBytes, err := marshalChat(payload)
`,
	}},
}

// addedBlocks are this copy's added functions, by file: each starts at its
// doc comment's first line and runs to the upstream line that follows it.
var addedBlocks = map[string][][2]string{
	"internal/openaiclient/chat.go": {{
		"// marshalChat writes r as MarshalJSON does",
		"// isReasoningModel returns true if the model is a reasoning model that has temperature constraints.\n",
	}},
}

// TestCopyMatchesUpstream holds the copy to the langchaingo version that
// go.mod requires: the same files, each the module's own once the patches are
// undone (both sides gofmt'ed, as the import path's change reorders the
// imports). It fails when go.mod moves langchaingo and the copy is not taken
// again (../../README.md says how).
func TestCopyMatchesUpstream(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", upstreamModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", upstreamModule, err)
	}
	dir := ""
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && k == `"Dir"` {
			dir = strings.Trim(strings.TrimSuffix(v, ","), `"`)
		}
	}
	if dir == "" {
		t.Fatalf("go mod download %s printed no Dir:\n%s", upstreamModule, out)
	}

	for _, sub := range []string{".", "internal/openaiclient"} {
		theirs := goFiles(t, filepath.Join(dir, "llms", "openai", sub))
		ours := goFiles(t, sub)
		if !slices.Equal(theirs, ours) {
			t.Errorf("%s: upstream has the files %v, the copy %v", sub, theirs, ours)
			continue
		}
		for _, name := range ours {
			path := filepath.Join(sub, name)
			up := read(t, filepath.Join(dir, "llms", "openai", path))
			up = bytes.ReplaceAll(up, []byte(upstreamClient), []byte(ownClient))
			own := read(t, path)
			for _, blk := range addedBlocks[filepath.ToSlash(path)] {
				from, to := bytes.Index(own, []byte(blk[0])), bytes.Index(own, []byte(blk[1]))
				if from < 0 || to < from {
					t.Errorf("%s: the added block %q is not there before %q", path, blk[0], blk[1])
					continue
				}
				own = append(own[:from:from], own[to:]...)
			}
			for _, p := range patches[filepath.ToSlash(path)] {
				if bytes.Count(own, []byte(p[1])) != 1 {
					t.Errorf("%s: the patch is not there once:\n%s", path, p[1])
				}
				own = bytes.Replace(own, []byte(p[1]), []byte(p[0]), 1)
			}
			if !bytes.Equal(gofmt(t, path, up), gofmt(t, path, own)) {
				t.Errorf("%s differs from %s beyond the patch: take the copy again (third_party/langchaingo/README.md)",
					path, filepath.Join(dir, "llms", "openai", path))
			}
		}
	}
}

// goFiles are the non-test Go files in dir, sorted.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	return names
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gofmt(t *testing.T, path string, src []byte) []byte {
	t.Helper()
	b, err := format.Source(src)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
