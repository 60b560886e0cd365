package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

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
		{"401", bg, &httpError{Status: 401}, ports.ErrLLMUnavailable},
		{"in url.Error", bg, &url.Error{Op: "Post", URL: "x", Err: &httpError{Status: 429}}, ports.ErrRateLimited},
		{"transport timeout", bg, &httpError{cause: timeoutErr{}}, ports.ErrLLMTimeout},
		{"transport refused", bg, &httpError{cause: errors.New("connection refused")}, ports.ErrLLMUnavailable},
		{"net timeout", bg, &url.Error{Op: "Post", URL: "x", Err: timeoutErr{}}, ports.ErrLLMTimeout},
		{"llms rate limit", bg, llms.NewError(llms.ErrCodeRateLimit, "anthropic", "slow down"), ports.ErrRateLimited},
		{"llms timeout", bg, llms.NewError(llms.ErrCodeTimeout, "x", "t"), ports.ErrLLMTimeout},
		{"llms auth", bg, llms.NewError(llms.ErrCodeAuthentication, "x", "a"), ports.ErrLLMUnavailable},
		{"status in text", bg, errors.New("API returned unexpected status code: 429: busy"), ports.ErrRateLimited},
		{"rate limit in text", bg, errors.New("Rate limit reached for requests"), ports.ErrRateLimited},
		{"anything else", bg, errors.New("boom"), ports.ErrLLMUnavailable},
		{"cancelled context wins", cancelled, errors.New("request cancelled"), context.Canceled},
		{"deadline wins", expired, &httpError{Status: 500}, ports.ErrLLMTimeout},
		{"deadline is also DeadlineExceeded", expired, errors.New("x"), context.DeadlineExceeded},
	}
	k := model.Key{Provider: "p", Model: "m"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := classify(tt.ctx, k, tt.err)
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
