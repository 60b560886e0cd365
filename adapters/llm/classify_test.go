package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestClassify(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	bg := context.Background()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"429", bg, &httpError{Status: 429}, ports.ErrRateLimited},
		{"500", bg, &httpError{Status: 500}, ports.ErrLLMUnavailable},
		{"502 wrapped", bg, fmt.Errorf("send request: %w", &httpError{Status: 502}), ports.ErrLLMUnavailable},
		{"408", bg, &httpError{Status: 408}, ports.ErrLLMTimeout},
		{"401", bg, &httpError{Status: 401}, ports.ErrLLMAuth},
		{"403", bg, &httpError{Status: 403, Message: "key disabled"}, ports.ErrLLMAuth},
		{"429 is a RateLimitError", bg, &httpError{Status: 429, RetryAfter: time.Second}, &ports.RateLimitError{}},
		{"404 model", bg, &httpError{Status: 404, Message: "The model `gpt-3` does not exist"}, ports.ErrModelRetired},
		{"404 other", bg, &httpError{Status: 404, Message: "no such route"}, ports.ErrLLMUnavailable},
		{"410", bg, &httpError{Status: 410}, ports.ErrModelRetired},
		{"400 deprecated model", bg, &httpError{Status: 400, Message: "The model claude-2 has been deprecated"}, ports.ErrModelRetired},
		{"400 context", bg, &httpError{Status: 400, Message: "This model's maximum context length is 8192 tokens"}, ports.ErrContextLength},
		{"400 prompt too long", bg, &httpError{Status: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, ports.ErrContextLength},
		{"413 context", bg, &httpError{Status: 413, Message: "context_length_exceeded"}, ports.ErrContextLength},
		{"400 other", bg, &httpError{Status: 400, Message: "bad schema"}, ports.ErrLLMUnavailable},
		{"in url.Error", bg, &url.Error{Op: "Post", URL: "x", Err: &httpError{Status: 429}}, ports.ErrRateLimited},
		{"transport timeout", bg, &httpError{cause: timeoutErr{}}, ports.ErrLLMTimeout},
		{"transport refused", bg, &httpError{cause: errors.New("connection refused")}, ports.ErrLLMUnavailable},
		{"net timeout", bg, &url.Error{Op: "Post", URL: "x", Err: timeoutErr{}}, ports.ErrLLMTimeout},
		{"llms rate limit", bg, llms.NewError(llms.ErrCodeRateLimit, "anthropic", "slow down"), ports.ErrRateLimited},
		{"llms timeout", bg, llms.NewError(llms.ErrCodeTimeout, "x", "t"), ports.ErrLLMTimeout},
		{"llms auth", bg, llms.NewError(llms.ErrCodeAuthentication, "x", "a"), ports.ErrLLMAuth},
		{"status in text", bg, errors.New("API returned unexpected status code: 429: busy"), ports.ErrRateLimited},
		{"rate limit in text", bg, errors.New("Rate limit reached for requests"), ports.ErrRateLimited},
		{"anything else", bg, errors.New("boom"), ports.ErrLLMUnavailable},
		{"a part the protocol cannot carry", bg, fmt.Errorf("%w: audio", errPart), ports.ErrInvalid},
		{"a role the protocol has not", bg, fmt.Errorf("%w %q", errRole, "tool"), ports.ErrInvalid},
		{"cancelled context wins", cancelled, errors.New("request cancelled"), context.Canceled},
		{"deadline wins", expired, &httpError{Status: 500}, ports.ErrLLMTimeout},
		{"deadline is also DeadlineExceeded", expired, errors.New("x"), context.DeadlineExceeded},
	}
	k := model.Key{Provider: "p", Model: "m"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := classify(tt.ctx, k, tt.err)
			if rl, ok := tt.want.(*ports.RateLimitError); ok {
				is.True(errors.As(err, &rl))
				is.True(errors.Is(err, ports.ErrRateLimited))
				is.Equal(rl.RetryAfter, time.Second)
				return
			}
			is.True(errors.Is(err, tt.want))
		})
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"error":{"message":"bad key","type":"x"}}`, "bad key"},
		{`{"error":"model not found"}`, "model not found"},
		{`{"message":"nope"}`, "nope"},
		{`<html>502 Bad Gateway</html>`, "<html>502 Bad Gateway</html>"},
		{``, ""},
	}
	for _, tt := range tests {
		if got := errorMessage([]byte(tt.body)); got != tt.want {
			t.Errorf("errorMessage(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"-3", 0},
		{"99999", maxRetryAfter},
		{"Mon, 23 Nov 2026 12:00:30 GMT", 30 * time.Second},
		{"Mon, 23 Nov 2026 11:00:00 GMT", 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// onceCloser stands for the SDKs' own wrapper of a request's body.
type onceCloser struct{ io.ReadCloser }

// TestInMemoryBody: a request whose body an SDK wrapped is sent with the
// body GetBody gives, which net/http writes with the headers in one write;
// the caller's request is left as it was.
func TestInMemoryBody(t *testing.T) {
	is := is.New(t)
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	is.NoErr(err)
	wrapped := onceCloser{req.Body}
	req.Body = wrapped
	out := inMemoryBody(req)
	is.Equal(req.Body, io.ReadCloser(wrapped)) // the caller's request untouched
	b, err := io.ReadAll(out.Body)
	is.NoErr(err)
	is.Equal(string(b), `{"model":"m"}`)
	_, known := out.Body.(onceCloser)
	is.True(!known)

	noReplay := &http.Request{Method: http.MethodPost, Body: wrapped}
	is.Equal(inMemoryBody(noReplay), noReplay) // nothing to replay: sent as is
}
