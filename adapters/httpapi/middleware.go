package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyPrincipal
)

func requestID(r *http.Request) string {
	id, _ := r.Context().Value(keyRequestID).(string)
	return id
}

// principal returns the authenticated caller; the authorize middleware
// guarantees one on every non-public route.
func principal(r *http.Request) *access.Principal {
	p, _ := r.Context().Value(keyPrincipal).(*access.Principal)
	return p
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	route  string // the matched route's template (noteRoute); empty: none matched
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and SetWriteDeadline.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// outer adds a request id, recovers panics, logs each request and bounds the
// body size.
func (s *Server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if id == "" || len(id) > 64 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-ID", id)
		r = r.WithContext(context.WithValue(r.Context(), keyRequestID, id))
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.bodyLimit(r))
		}
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if sw.status == 0 {
					s.fail(sw, r, http.StatusInternalServerError, "internal_error", "", "internal error")
				}
			}
			s.log.InfoContext(r.Context(), "request", "request_id", id, "method", r.Method, "path", r.URL.Path,
				"status", sw.status, "bytes", sw.bytes, "duration_ms", time.Since(start).Milliseconds())
			if s.cfg.Observer != nil {
				s.cfg.Observer.ObserveRequest(r.Method, sw.routeName(), sw.status, time.Since(start))
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// credential extracts the presented credential: X-API-Key, or
// Authorization: Bearer (a session token or an access key), or, for event
// streams only, ?token= because EventSource cannot set headers.
func credential(r *http.Request, allowQuery bool) (string, bool, error) {
	if k := strings.TrimSpace(r.Header.Get("X-API-Key")); k != "" {
		if len(k) > access.MaxCredentialLen {
			return "", false, errors.New("X-API-Key is too long")
		}
		return k, true, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		tok, err := access.ParseAuthorization(h)
		if err != nil {
			return "", false, err
		}
		return tok, access.IsAccessKey(tok), nil
	}
	if allowQuery {
		if tok := r.URL.Query().Get("token"); tok != "" && len(tok) <= access.MaxCredentialLen {
			return tok, access.IsAccessKey(tok), nil
		}
	}
	return "", false, nil
}

// authenticate resolves the credential, if any, into a principal. Whether
// one is required is authorize's decision.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tmpl := routeTemplate(r)
		if public(r.Method, tmpl) {
			// A stale credential must not block login or registration.
			next.ServeHTTP(w, r)
			return
		}
		cred, isKey, err := credential(r, strings.HasPrefix(tmpl, "/api/llm/stream/") || docsRoute(tmpl))
		if cred == "" && err == nil && docsRoute(tmpl) {
			if c, cerr := r.Cookie(docsCookie); cerr == nil && len(c.Value) <= access.MaxCredentialLen {
				cred, isKey = c.Value, access.IsAccessKey(c.Value)
			}
		}
		if err != nil {
			s.fail(w, r, http.StatusUnauthorized, "invalid_credentials", "", err.Error())
			return
		}
		if cred == "" {
			next.ServeHTTP(w, r)
			return
		}
		var p *access.Principal
		switch {
		case isKey:
			p, err = s.access.AuthenticateKey(r.Context(), cred)
		case dbsync.IsAccessToken(cred) && s.consumer != nil:
			p, err = s.consumer.Authenticate(r.Context(), cred, s.seen(r))
		default:
			p, err = s.access.AuthenticateToken(r.Context(), cred)
		}
		if err != nil {
			s.Error(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyPrincipal, p)))
	})
}

// authorize refuses early, before a body is read, what the matched route's
// use case would refuse: the same rule (domain/access) decides both.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := authorizeRoute(principal(r), r.Method, routeTemplate(r)); err != nil {
			s.Error(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// routeTemplate is the matched route's path template with variable
// patterns removed ("/api/docs/{asset:.*}" -> "/api/docs/{asset}"), the form
// the policy and the OpenAPI document use.
func routeTemplate(r *http.Request) string {
	if cr := mux.CurrentRoute(r); cr != nil {
		if t, err := cr.GetPathTemplate(); err == nil {
			return plainTemplate(t)
		}
	}
	return r.URL.Path
}

func plainTemplate(t string) string {
	for {
		i := strings.Index(t, ":")
		j := strings.Index(t, "}")
		if i < 0 || j < i {
			return t
		}
		t = t[:i] + t[j:]
	}
}

// noteRoute, the router's first middleware, notes the matched route's
// template on outer's statusWriter, so that the request's metrics need not
// match the request against every route again.
func noteRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := w.(*statusWriter); ok {
			if cr := mux.CurrentRoute(r); cr != nil {
				if t, err := cr.GetPathTemplate(); err == nil {
					sw.route = t
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// routeName names a request's route by its template (a bounded set of
// metric labels); "unmatched" for no route (404, 405).
func (w *statusWriter) routeName() string {
	if w.route == "" {
		return "unmatched"
	}
	return w.route
}
