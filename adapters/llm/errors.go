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
	"time"

	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaioption "github.com/openai/openai-go/v3/option"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// httpError is a provider's answer with a failure status, or (Status 0) a
// request that got no answer. Every client sends through a statusDoer, so
// a failure reaches classify as this type whichever SDK made the request:
// classification reads a status code and a header, never an SDK's error
// type or wording. It has no Unwrap, so that no client mistakes its cause
// for its own and rewrites it.
type httpError struct {
	Status  int
	Message string
	// RetryAfter is the answer's Retry-After, zero when absent.
	RetryAfter time.Duration
	cause      error
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
// parsing each client's message; it is the SDKs' option.HTTPClient and
// the Ollama client's transport. A keyless doer removes the key headers the client sets, so that a keyless
// provider never receives a placeholder key.
type statusDoer struct {
	hc      *http.Client
	keyless bool
}

var (
	_ openaioption.HTTPClient    = statusDoer{}
	_ anthropicoption.HTTPClient = statusDoer{}
	_ http.RoundTripper          = statusDoer{}
)

// strip removes the key headers of a keyless provider's request.
func (d statusDoer) strip(req *http.Request) {
	if d.keyless {
		req.Header.Del("Authorization")
		req.Header.Del("X-Api-Key")
	}
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

func (d statusDoer) Do(req *http.Request) (*http.Response, error) {
	d.strip(req)
	resp, err := d.hc.Do(inMemoryBody(req))
	if err != nil {
		return nil, &httpError{cause: err}
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	return nil, failure(req, resp)
}

// inMemoryBody returns req with the body GetBody gives. The SDKs wrap each
// attempt's body in a reader of their own (so that it is closed once),
// which net/http cannot tell is in memory: it then flushes the headers
// before it writes the body, two system calls and two packets for every
// request. The body GetBody gives is a reader net/http knows, so the
// request leaves in one write.
func inMemoryBody(req *http.Request) *http.Request {
	if req.GetBody == nil || req.Body == nil || req.Body == http.NoBody {
		return req
	}
	body, err := req.GetBody()
	if err != nil {
		return req
	}
	out := req.WithContext(req.Context())
	out.Body = body
	return out
}

// failure reads a failed answer into an *httpError and closes its body. A
// provider that echoes the key in its message gets it redacted, so that the
// error can be logged.
func failure(req *http.Request, resp *http.Response) *httpError {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := errorMessage(body)
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		v := strings.TrimSpace(strings.TrimPrefix(req.Header.Get(h), "Bearer "))
		if len(v) >= 8 {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return &httpError{Status: resp.StatusCode, Message: msg, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// maxRetryAfter bounds what a provider may ask a key to rest.
const maxRetryAfter = 10 * time.Minute

// retryAfter reads a Retry-After value: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
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
	return nil, failure(req, resp)
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
	if errors.Is(err, errPart) || errors.Is(err, errRole) {
		return wrap(ports.ErrInvalid) // the request, not the provider
	}
	var he *httpError
	if errors.As(err, &he) {
		msg := strings.ToLower(he.Message)
		switch {
		case he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden:
			return wrap(ports.ErrLLMAuth)
		case he.Status == http.StatusTooManyRequests:
			return fmt.Errorf("llm: %s: %w: %v", key, &ports.RateLimitError{RetryAfter: he.RetryAfter}, err)
		case he.Status == http.StatusGone, he.Status == http.StatusNotFound && strings.Contains(msg, "model"), retired(msg):
			return wrap(ports.ErrModelRetired)
		case (he.Status == http.StatusBadRequest || he.Status == http.StatusRequestEntityTooLarge) && tooLong(msg):
			return wrap(ports.ErrContextLength)
		case he.Status == http.StatusRequestTimeout || he.Status == http.StatusGatewayTimeout:
			return wrap(ports.ErrLLMTimeout)
		case he.Status == 0 && forbidden(he.cause):
			return fmt.Errorf("llm: %s: %w: %w", key, ports.ErrLLMUnavailable, ErrForbiddenDestination)
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
		case llms.ErrCodeAuthentication:
			return wrap(ports.ErrLLMAuth)
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

// tooLong recognises the providers' context-length refusals: OpenAI's
// context_length_exceeded, Anthropic's "prompt is too long", and the
// wording of OpenAI-compatible servers.
func tooLong(msg string) bool {
	for _, s := range []string{"context_length_exceeded", "context length", "context window", "maximum context", "prompt is too long", "too many tokens"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retired recognises a model the provider no longer serves.
func retired(msg string) bool {
	for _, s := range []string{"model_not_found", "has been deprecated", "was deprecated", "decommissioned", "no longer available", "does not exist"} {
		if strings.Contains(msg, s) && strings.Contains(msg, "model") {
			return true
		}
	}
	return false
}
