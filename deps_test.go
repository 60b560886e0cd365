package enrich_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/entityenrich/enrich"

// TestDependencyRule enforces DESIGN.md's dependency rule on non-test code:
// domain -> domain only (and the standard library); ports -> domain;
// app -> domain, ports; adapters -> domain, ports (never another adapter),
// and the driving adapters (httpapi, mcp) also app. The job runtime
// (adapters/jobrun) imports only domain and ports, and only the root
// imports it: app reaches it through ports.JobRunner.
func TestDependencyRule(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".") && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		layer := strings.Split(filepath.ToSlash(path), "/")
		if len(layer) < 2 {
			return nil // root package: may import anything
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if msg := violates(layer, p); msg != "" {
				t.Errorf("%s imports %s: %s", path, p, msg)
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no imports checked")
	}
}

func violates(layer []string, imp string) string {
	own := strings.HasPrefix(imp, module+"/")
	rel := strings.TrimPrefix(imp, module+"/")
	top := strings.Split(rel, "/")[0]
	stdlib := !strings.Contains(strings.Split(imp, "/")[0], ".")
	if rel == "adapters/jobrun" && !(len(layer) > 1 && layer[0] == "adapters" && layer[1] == "jobrun") {
		return "only the root wires the job runtime; the use cases reach it through ports.JobRunner"
	}
	switch layer[0] {
	case "domain":
		if !stdlib && !(own && top == "domain") {
			return "domain may import only the standard library and domain"
		}
	case "ports":
		if !stdlib && !(own && top == "domain") {
			return "ports may import only the standard library and domain"
		}
	case "app":
		if own && top != "domain" && top != "ports" && top != "app" {
			return "app may import only domain and ports"
		}
		if !own && !stdlib {
			return "app may not import third-party packages: put them behind a port"
		}
	case "adapters":
		if len(layer) > 1 && layer[1] == "jobrun" && !stdlib && !(own && (top == "domain" || top == "ports")) {
			// Its queue driver (River, or the in-process queue) stays
			// behind ports.JobQueue.
			return "the job runtime imports only domain and ports"
		}
		if !own {
			return ""
		}
		if len(layer) > 1 && layer[1] == "netguard" {
			return "adapters/netguard is a leaf: it may import no package of ours"
		}
		switch top {
		case "domain", "ports":
			return ""
		case "migrations":
			// The embedded SQL files are data, not code of another layer.
			if layer[1] == "postgres" {
				return ""
			}
			return "only the postgres adapter reads the migrations"
		case "app":
			if layer[1] == "httpapi" || layer[1] == "mcp" {
				return ""
			}
			if layer[1] == "jobcodec" {
				// Implements app.JobRequests: the stored format of the
				// app's job request types. (Its event codec needs no app:
				// the adapters that write events reach it through
				// ports.EventCodec, never by importing it.)
				return ""
			}
			return "only driving adapters (httpapi, mcp) and adapters/jobcodec may use app"
		case "adapters":
			if parts := strings.Split(rel, "/"); len(parts) > 1 && parts[1] == layer[1] {
				return ""
			}
			if rel == "adapters/netguard" {
				// A library shared by the adapters that send requests to
				// customers' URLs; it imports no package of ours (checked
				// below).
				return ""
			}
			return "an adapter may not import another adapter"
		}
		return "adapters may import only domain, ports and (driving adapters) app"
	}
	return ""
}

func TestViolates(t *testing.T) {
	tests := []struct {
		layer []string
		imp   string
		bad   bool
	}{
		{[]string{"domain", "job"}, "time", false},
		{[]string{"domain", "job"}, module + "/domain/access", false},
		{[]string{"domain", "job"}, module + "/ports", true},
		{[]string{"domain", "job"}, "github.com/google/uuid", true},
		{[]string{"ports"}, module + "/app", true},
		{[]string{"app"}, module + "/adapters/memory", true},
		{[]string{"adapters", "llm", "guard.go"}, module + "/adapters/netguard", false},
		{[]string{"adapters", "netguard", "netguard.go"}, module + "/ports", true},
		{[]string{"app"}, "github.com/jackc/pgx/v5", true},
		{[]string{"adapters", "postgres"}, module + "/adapters/memory", true},
		{[]string{"adapters", "postgres"}, module + "/app", true},
		{[]string{"adapters", "httpapi"}, module + "/app", false},
		{[]string{"adapters", "jobcodec"}, module + "/app", false},
		{[]string{"adapters", "memory"}, module + "/adapters/jobcodec", true},
		{[]string{"adapters", "httpapi"}, module + "/adapters/jobcodec", true},
		{[]string{"adapters", "postgres"}, "github.com/uptrace/bun", false},
		{[]string{"adapters", "postgres"}, module + "/migrations", false},
		{[]string{"adapters", "httpapi"}, module + "/migrations", true},
		{[]string{"cmd", "enrichd"}, module + "/adapters/memory", false},
		{[]string{"adapters", "jobrun", "engine.go"}, module + "/ports", false},
		{[]string{"adapters", "jobrun", "engine.go"}, module + "/domain/job", false},
		{[]string{"adapters", "jobrun", "engine.go"}, "context", false},
		{[]string{"adapters", "jobrun", "engine.go"}, "github.com/riverqueue/river", true},
		{[]string{"adapters", "jobrun", "engine.go"}, module + "/adapters/inproc", true},
		{[]string{"adapters", "jobrun", "engine.go"}, module + "/app", true},
		{[]string{"app", "jobs.go"}, module + "/adapters/jobrun", true},
		{[]string{"adapters", "httpapi", "server.go"}, module + "/adapters/jobrun", true},
		{[]string{"cmd", "enrichd", "main.go"}, module + "/adapters/jobrun", true},
	}
	for _, tt := range tests {
		if got := violates(tt.layer, tt.imp) != ""; got != tt.bad {
			t.Errorf("violates(%v, %s) = %v, want %v", tt.layer, tt.imp, got, tt.bad)
		}
	}
}

// TestDependencyRuleRootWiresTheJobRuntime: the root builds the job runtime with its
// Runners table (jobrun.New) and binds it to ports.JobRunner, the one way
// the use cases reach it.
func TestDependencyRuleRootWiresTheJobRuntime(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var constructed, bound bool
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fn := exprString(call.Fun); {
			case fn == "jobrun.New":
				constructed = true
			case fn == "wire.Bind" && len(call.Args) == 2 && exprString(call.Args[0]) == "new(ports.JobRunner)" &&
				exprString(call.Args[1]) == "new(*jobrun.Engine)":
				bound = true
			}
			return true
		})
	}
	if !constructed || !bound {
		t.Errorf("the root builds the job runtime with jobrun.New (%v) and binds it to ports.JobRunner (%v)", constructed, bound)
	}
}

// exprString prints the selectors, stars and calls of an expression.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.CallExpr:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = exprString(a)
		}
		return exprString(e.Fun) + "(" + strings.Join(args, ", ") + ")"
	}
	return ""
}
