package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// httpError is a provider's answer with a failure status, or (Status 0) a
// request that got no answer. It deliberately has no Unwrap: langchaingo's
// openai client rewrites any error that unwraps to a net.Error or a context
// error into a bare string, and this type must reach classify intact.
type httpError struct {
	Status  int
	Message string
	cause   error
}

func (e *httpError) Error() string {
	if e.Status == 0 {
		return e.cause.Error()
	}
	if e.Message == "" {
		return fmt.Sprintf("http %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("http %d: %s", e.Status, e.Message)
}

// statusDoer turns failure statuses into *httpError before the provider
// client sees them, so that classification reads a status code instead of
// parsing each client's message.
type statusDoer struct{ hc *http.Client }

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, &httpError{cause: err}
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, &httpError{Status: resp.StatusCode, Message: errorMessage(body)}
}

// RoundTrip serves clients that take an *http.Client (ollama) rather than a
// Doer; the *httpError then arrives inside a *url.Error.
func (d statusDoer) RoundTrip(req *http.Request) (*http.Response, error) {
	t := d.hc.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	resp, err := t.RoundTrip(req)
	if err != nil || resp.StatusCode < 400 {
		return resp, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, &httpError{Status: resp.StatusCode, Message: errorMessage(body)}
}

// errorMessage extracts the message of the usual error bodies
// ({"error": {"message": ...}}, {"error": "..."}, {"message": ...}).
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

var statusInText = regexp.MustCompile(`(?i)status(?: code)?:? (\d{3})\b`)

// classify maps a failed call onto the ports' LLM errors, keeping the
// provider's message as detail.
func classify(ctx context.Context, key model.Key, err error) error {
	wrap := func(sentinel error) error {
		return fmt.Errorf("llm: %s: %w: %v", key, sentinel, err)
	}
	// The context decides first: a client may report its cancellation as
	// anything, including a plain string.
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Errorf("llm: %s: %w: %w", key, ports.ErrLLMTimeout, ctxErr)
	case ctxErr != nil:
		return fmt.Errorf("llm: %s: %w", key, ctxErr)
	}
	var he *httpError
	if errors.As(err, &he) {
		switch {
		case he.Status == http.StatusTooManyRequests:
			return wrap(ports.ErrRateLimited)
		case he.Status == http.StatusRequestTimeout || he.Status == http.StatusGatewayTimeout:
			return wrap(ports.ErrLLMTimeout)
		case he.Status == 0:
			var ne net.Error
			if errors.As(he.cause, &ne) && ne.Timeout() {
				return wrap(ports.ErrLLMTimeout)
			}
		}
		return wrap(ports.ErrLLMUnavailable)
	}
	var le *llms.Error
	if errors.As(err, &le) {
		switch le.Code {
		case llms.ErrCodeRateLimit:
			return wrap(ports.ErrRateLimited)
		case llms.ErrCodeTimeout:
			return wrap(ports.ErrLLMTimeout)
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return wrap(ports.ErrLLMTimeout)
	}
	if m := statusInText.FindStringSubmatch(err.Error()); m != nil {
		if code, _ := strconv.Atoi(m[1]); code == http.StatusTooManyRequests {
			return wrap(ports.ErrRateLimited)
		}
	}
	if s := strings.ToLower(err.Error()); strings.Contains(s, "rate limit") || strings.Contains(s, "too many requests") {
		return wrap(ports.ErrRateLimited)
	}
	return wrap(ports.ErrLLMUnavailable)
}
