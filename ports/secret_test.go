package ports_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

const plain = "sk-plaintext-4821"

// Every way a secret could be written out (fmt's verbs, an error wrapping
// it, JSON, both log handlers, nested in a struct or a map) writes
// "[redacted]" instead.
func TestSecretIsRedacted(t *testing.T) {
	s := ports.Secret(plain)
	req := ports.FetchRequest{URL: "https://example.com", Auth: ports.FetchAuth{BearerToken: s, Password: s}}
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	logged := func(h func(*bytes.Buffer) slog.Handler) string {
		var buf bytes.Buffer
		l := slog.New(h(&buf))
		l.Info("call", "key", s, "req", req, "group", slog.GroupValue(slog.Any("key", s)))
		l.Error("failed", "err", fmt.Errorf("provider refused %v: %w", s, errors.New("401")))
		return buf.String()
	}
	tests := []struct {
		name string
		out  string
	}{
		{"fmt verbs", fmt.Sprint(s) + fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, s, s, s, s, s, s, s)},
		{"fmt nested", fmt.Sprintf("%v %+v %#v", req, req, []ports.Secret{s})},
		{"error", fmt.Errorf("calling with %s: %w", s, errors.New("x")).Error()},
		{"json value", jsonOf(s)},
		{"json nested", jsonOf(map[string]any{"req": req, "keys": []ports.Secret{s}})},
		{"slog json", logged(func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) })},
		{"slog text", logged(func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) })},
	}
	is.New(t).Equal(s.Reveal(), plain) // the control: the plaintext is there for the provider client
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.True(!strings.Contains(tt.out, plain))     // the plaintext is not written
			is.True(!strings.Contains(tt.out, "4821"))    // nor its tail
			is.True(strings.Contains(tt.out, "redacted")) // something stands in its place
		})
	}
}

// A panic that crashes the process prints its value through the runtime,
// not fmt: run one in a child and read what it printed.
func TestSecretInPanic(t *testing.T) {
	if os.Getenv("ENRICH_SECRET_PANIC_CHILD") != "" {
		panic(ports.Secret(plain))
	}
	is := is.New(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSecretInPanic$")
	cmd.Env = append(os.Environ(), "ENRICH_SECRET_PANIC_CHILD=1", "GOTRACEBACK=all")
	out, err := cmd.CombinedOutput()
	is.True(err != nil) // the child crashed
	is.True(strings.Contains(string(out), "panic: [redacted]"))
	is.True(!strings.Contains(string(out), plain))
}
