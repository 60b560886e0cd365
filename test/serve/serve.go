// Package serve starts an enrich server for tests that talk to it as a user
// would: real HTTP on a loopback port, stopped when the test ends.
package serve

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
)

// Sandbox starts a server on memory with the sandbox models, as make run
// does, with cfg's other settings, and returns its URL. Only errors are
// logged.
func Sandbox(t testing.TB, cfg enrich.Config) string {
	t.Helper()
	cfg.Sandbox = true
	cfg.JWTSecret = strings.Repeat("s", 40)
	cfg.PasswordHashing = "fast"
	cfg.ShutdownGrace = time.Second
	if cfg.EmbeddingModel == "" {
		cfg.EmbeddingModel = "builtin::ngram-384" // the environment's default
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	_, url := Start(t, cfg)
	return url
}

// Start starts a server with cfg as it is on a loopback port and returns
// it with its URL; it stops when the test ends.
func Start(t testing.TB, cfg enrich.Config) (*enrich.Server, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := enrich.NewServer(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, "http://" + ln.Addr().String()
}
