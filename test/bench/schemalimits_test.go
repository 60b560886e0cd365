package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
)

// depthBomb is issue 27's schema: object properties nested 3,000 deep
// (about 120 KB), which compiled for 109 s before the limits.
func depthBomb() string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, 3000) + `{"type":"string"}` + strings.Repeat(`}}`, 3000)
}

// BenchmarkSchemaDepthBomb measures the refusal of the depth bomb (400
// schema_too_complex; the goal: within 100 ms): saving it
// in-process (app.SchemaService.Create) and over HTTP (POST
// /api/schema/saved on a loopback server, the body sent and the answer
// read), on memory storage.
func BenchmarkSchemaDepthBomb(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := enrich.Config{Sandbox: true, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := enrich.NewServer(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	e := srv.Embedded
	sess, err := e.Access.Register(ctx, "bomb@example.com", "benchmark password", "Bench")
	if err != nil {
		b.Fatal(err)
	}
	p := &access.Principal{OrgID: sess.Org.ID, UserID: sess.User.ID, Role: access.Owner, Scopes: access.DefaultScopes()}
	role := access.Editor
	_, key, err := e.Access.CreateKey(ctx, p, app.NewKeyInput{Name: "bench", Role: &role})
	if err != nil {
		b.Fatal(err)
	}
	bomb := depthBomb()
	b.Run("in-process", func(b *testing.B) {
		b.SetBytes(int64(len(bomb)))
		for b.Loop() {
			_, err := e.Schemas.Create(ctx, p, app.NewSchemaInput{Name: "Bomb", Schema: json.RawMessage(bomb)})
			if !errors.Is(err, schema.ErrTooComplex) {
				b.Fatalf("got %v", err)
			}
		}
	})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	body := []byte(`{"name":"Bomb","schema":` + bomb + `}`)
	b.Run("http", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/api/schema/saved", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !bytes.Contains(msg, []byte("schema_too_complex")) {
				b.Fatalf("%d %s", resp.StatusCode, msg)
			}
		}
	})
}
