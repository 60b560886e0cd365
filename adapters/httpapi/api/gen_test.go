package api_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedTypesFresh regenerates the types from ../openapi.yaml into a
// temporary file with the pinned generator (a go.mod tool, so it runs
// offline from the module cache) and compares them with the committed file.
func TestGeneratedTypesFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the generator")
	}
	out := filepath.Join(t.TempDir(), "types.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "cfg.yaml", "-o", out, "../openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("types.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatal("types.gen.go is stale: run make generate")
	}
}
