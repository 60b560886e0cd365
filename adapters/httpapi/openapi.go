package httpapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gorilla/mux"
)

//go:embed openapi.yaml
var openapiYAML []byte

// LoadSpec parses and validates the embedded OpenAPI document. Each call
// returns a fresh document, so a caller may change its copy.
func LoadSpec() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: validate: %w", err)
	}
	return doc, nil
}

var specJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := LoadSpec()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode: %w", err)
	}
	return b, nil
})

// SpecJSON returns the document as JSON, as served at GET /api/openapi.json.
// The bytes are the caller's own.
func SpecJSON() ([]byte, error) {
	b, err := specJSON()
	return bytes.Clone(b), err
}

// SpecRoute is one operation of the document.
type SpecRoute struct{ Method, Path string }

// SpecRoutes lists every operation of doc, with path templates as written in
// the document (e.g. /api/records/{id}), sorted by path then method.
func SpecRoutes(doc *openapi3.T) []SpecRoute {
	var out []SpecRoute
	if doc == nil || doc.Paths == nil {
		return out
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, SpecRoute{Method: method, Path: path})
		}
	}
	slices.SortFunc(out, func(a, b SpecRoute) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return out
}

// validatedOp is what the validator precomputes for one operation.
type validatedOp struct {
	route *routers.Route
	// body is the JSON request body's schema; nil when the operation takes no body.
	body         *openapi3.Schema
	bodyRequired bool
	// multipart: the body is multipart/form-data, which its handler reads
	// as a stream (an upload); only its Content-Type is checked here.
	multipart bool
	// streams are the media types besides JSON the operation takes
	// (text/csv on the concept import): their bodies go to the handler,
	// which reads and checks them; only the parameters are checked here.
	streams []string
}

type validator struct {
	router  routers.Router
	ops     map[SpecRoute]*validatedOp
	opts    *openapi3filter.Options
	onError func(w http.ResponseWriter, r *http.Request, status int, field, detail string)
}

// ValidateRequests returns middleware that rejects requests not matching doc:
// parameters and JSON bodies are checked against the document, and a
// failure is reported through onError with a status (400, 413 or 415), the
// offending field (a dotted path such as "models.0", or a parameter name) and
// a short detail. Requests to routes the document does not describe pass
// through untouched. Authentication is not its business: another middleware
// does it. The body stays readable by the next handler.
//
// Placed inside a gorilla/mux router (Router.Use), it reuses the router's
// match; elsewhere it matches the request against the document itself.
func ValidateRequests(doc *openapi3.T, onError func(w http.ResponseWriter, r *http.Request, status int, field, detail string)) (func(http.Handler) http.Handler, error) {
	if doc == nil || doc.Paths == nil {
		return nil, errors.New("openapi: no document")
	}
	if onError == nil {
		return nil, errors.New("openapi: no error writer")
	}
	// kin-openapi checks the schemas of an OpenAPI 3.1 document with a JSON
	// Schema 2020-12 validator that it marshals and compiles again on every
	// request, which costs far more than the check itself. Its built-in
	// validator walks the resolved schemas directly and understands what the
	// request side of this document uses, type arrays with "null" included;
	// TestValidateRequestsAgreesWith31Engine holds the two to the same
	// verdicts. So validation runs on a shallow copy that kin-openapi reads
	// as 3.0, without the global security requirements it would only
	// re-read the body for.
	vdoc := *doc
	vdoc.OpenAPI = "3.0.3"
	vdoc.Security = nil
	router, err := gorillamux.NewRouter(&vdoc)
	if err != nil {
		return nil, fmt.Errorf("openapi: router: %w", err)
	}
	v := &validator{
		router: router,
		ops:    map[SpecRoute]*validatedOp{},
		opts: &openapi3filter.Options{
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			// Handlers apply defaults themselves; the body stays as sent.
			SkipSettingDefaults: true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{
				openapi3.WithStringFormatValidator("email", openapi3.NewCallbackValidator(checkEmail)),
			},
		},
		onError: onError,
	}
	for path, item := range vdoc.Paths.Map() {
		for method, op := range item.Operations() {
			o := &validatedOp{route: &routers.Route{Spec: &vdoc, Path: path, PathItem: item, Method: method, Operation: op}}
			if rb := op.RequestBody; rb != nil && rb.Value != nil && rb.Value.Content.Get("multipart/form-data") != nil &&
				len(rb.Value.Content) == 1 {
				o.multipart = true
			} else if rb := op.RequestBody; rb != nil && rb.Value != nil {
				mt := rb.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
					return nil, fmt.Errorf("openapi: %s %s: request body is not described as application/json", method, path)
				}
				o.body, o.bodyRequired = mt.Schema.Value, rb.Value.Required
				for name := range rb.Value.Content {
					if name != "application/json" {
						o.streams = append(o.streams, name)
					}
				}
				slices.Sort(o.streams)
			}
			v.ops[SpecRoute{method, path}] = o
		}
	}
	return v.middleware, nil
}

// checkEmail accepts what the registration itself accepts.
func checkEmail(s string) error {
	if _, err := mail.ParseAddress(strings.TrimSpace(s)); err != nil || !strings.Contains(s, "@") {
		return errors.New("not an email address")
	}
	return nil
}

func (v *validator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, params := v.find(r)
		if op == nil {
			next.ServeHTTP(w, r)
			return
		}
		if op.multipart {
			v.multipartOp(w, r, op, params, next)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && slices.Contains(op.streams, mt) {
			v.paramsOnly(w, r, op, params, next)
			return
		}
		var data []byte
		if op.body != nil && r.Body != nil && r.Body != http.NoBody {
			var err error
			if data, err = io.ReadAll(r.Body); err != nil {
				if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
					v.onError(w, r, http.StatusRequestEntityTooLarge, "", "request body too large")
					return
				}
				v.onError(w, r, http.StatusBadRequest, "", "request body could not be read")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
			r.ContentLength = int64(len(data))
		}
		if op.body != nil {
			if len(data) == 0 {
				if op.bodyRequired {
					v.onError(w, r, http.StatusBadRequest, "", "request body is required")
					return
				}
			} else {
				if status, detail := checkContentType(r, op.streams); status != 0 {
					v.onError(w, r, status, "Content-Type", detail)
					return
				}
				if !json.Valid(data) {
					v.onError(w, r, http.StatusBadRequest, "", "request body is not valid JSON")
					return
				}
			}
		}
		in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: op.route, Options: v.opts}
		if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
			field, detail := describe(err, op.body, data)
			v.onError(w, r, http.StatusBadRequest, field, detail)
			return
		}
		if data != nil {
			r.Body = io.NopCloser(bytes.NewReader(data))
		}
		next.ServeHTTP(w, r)
	})
}

// multipartOp checks an upload's Content-Type and its parameters, leaving
// the body, which may be large, to the handler's streaming reader.
func (v *validator) multipartOp(w http.ResponseWriter, r *http.Request, op *validatedOp, params map[string]string, next http.Handler) {
	mt, ps, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || ps["boundary"] == "" {
		v.onError(w, r, http.StatusUnsupportedMediaType, "Content-Type",
			"request body must be multipart/form-data with a boundary, not "+strconv.Quote(r.Header.Get("Content-Type")))
		return
	}
	v.paramsOnly(w, r, op, params, next)
}

// paramsOnly checks the parameters of a request whose body its handler
// reads as a stream.
func (v *validator) paramsOnly(w http.ResponseWriter, r *http.Request, op *validatedOp, params map[string]string, next http.Handler) {
	opts := *v.opts
	opts.ExcludeRequestBody = true
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: op.route, Options: &opts}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		field, detail := describe(err, nil, nil)
		v.onError(w, r, http.StatusBadRequest, field, detail)
		return
	}
	next.ServeHTTP(w, r)
}

// find returns the operation r is for and its path parameters, or nil when
// the document does not describe it.
func (v *validator) find(r *http.Request) (*validatedOp, map[string]string) {
	if cr := mux.CurrentRoute(r); cr != nil {
		if tmpl, err := cr.GetPathTemplate(); err == nil {
			if op := v.ops[SpecRoute{r.Method, tmpl}]; op != nil {
				return op, mux.Vars(r)
			}
		}
	}
	route, params, err := v.router.FindRoute(r)
	if err != nil {
		return nil, nil
	}
	return v.ops[SpecRoute{route.Method, route.Path}], params
}

// checkContentType accepts application/json (with parameters) and, for
// clients that do not say, no Content-Type at all; others names the
// operation's other media types in the refusal.
func checkContentType(r *http.Request, others []string) (int, string) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		r.Header.Set("Content-Type", "application/json")
		return 0, ""
	}
	base, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(base), "application/json") {
		want := "application/json"
		for _, o := range others {
			want += " or " + o
		}
		return http.StatusUnsupportedMediaType, "request body must be " + want + ", not " + strconv.Quote(ct)
	}
	return 0, ""
}

// describe turns a validation error into the offending field and a short
// message naming it.
func describe(err error, body *openapi3.Schema, data []byte) (string, string) {
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return "", "request is invalid: " + err.Error()
	}
	if p := re.Parameter; p != nil {
		name := p.Name
		var pe *openapi3filter.ParseError
		var se *openapi3.SchemaError
		switch {
		case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
			return name, fmt.Sprintf("field %q is required", name)
		case errors.Is(re.Err, openapi3filter.ErrInvalidEmptyValue):
			return name, fmt.Sprintf("field %q must not be empty", name)
		case errors.As(re.Err, &pe):
			var s *openapi3.Schema
			if p.Schema != nil {
				s = p.Schema.Value
			}
			return name, fmt.Sprintf("field %q must be %s", name, typeNames(s))
		case errors.As(re.Err, &se):
			return name, schemaDetail(name, se)
		}
		return name, fmt.Sprintf("field %q is invalid", name)
	}
	var se *openapi3.SchemaError
	switch {
	case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
		return "", "request body is required"
	case errors.As(re.Err, &se):
		ptr := se.JSONPointer()
		field := strings.Join(ptr, ".")
		switch se.SchemaField {
		case "properties", "additionalProperties":
			if name, ok := unknownField(body, data, ptr); ok {
				field = joinField(field, name)
				return field, fmt.Sprintf("unknown field %q", field)
			}
		case "required":
			if name, ok := missingField(body, data, ptr); ok {
				field = joinField(field, name)
			}
			if field != "" {
				return field, fmt.Sprintf("field %q is required", field)
			}
		}
		if field == "" {
			return "", "request body " + strings.TrimPrefix(schemaDetail("", se), `field "" `)
		}
		return field, schemaDetail(field, se)
	case re.Reason != "":
		return "", "request body is invalid: " + re.Reason
	}
	return "", "request body is invalid"
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// schemaDetail words one schema violation of field.
func schemaDetail(field string, se *openapi3.SchemaError) string {
	s := se.Schema
	if s == nil {
		return fmt.Sprintf("field %q is invalid: %s", field, se.Reason)
	}
	prefix := fmt.Sprintf("field %q ", field)
	switch se.SchemaField {
	case "type", "nullable":
		return prefix + "must be " + typeNames(s)
	case "enum":
		vals := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			if e == nil {
				vals = append(vals, "null")
				continue
			}
			vals = append(vals, fmt.Sprint(e))
		}
		return prefix + "must be one of " + strings.Join(vals, ", ")
	case "maximum":
		if s.Max != nil {
			return prefix + "must be at most " + strconv.FormatFloat(*s.Max, 'f', -1, 64)
		}
	case "minimum":
		if s.Min != nil {
			return prefix + "must be at least " + strconv.FormatFloat(*s.Min, 'f', -1, 64)
		}
	case "maxItems":
		if s.MaxItems != nil {
			return prefix + "must have at most " + items(*s.MaxItems)
		}
	case "minItems":
		return prefix + "must have at least " + items(s.MinItems)
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("%smust be at most %d characters long", prefix, *s.MaxLength)
		}
	case "minLength":
		if s.MinLength == 1 {
			return prefix + "must not be empty"
		}
		return fmt.Sprintf("%smust be at least %d characters long", prefix, s.MinLength)
	case "uniqueItems":
		return prefix + "must not repeat items"
	case "format":
		switch s.Format {
		case "date-time":
			return prefix + "must be an RFC 3339 date-time"
		case "email":
			return prefix + "must be an email address"
		}
		return prefix + "must be a valid " + s.Format
	}
	return prefix + "is invalid: " + se.Reason
}

func items(n uint64) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.FormatUint(n, 10) + " items"
}

var typeArticles = map[string]string{
	openapi3.TypeObject: "an object", openapi3.TypeArray: "an array", openapi3.TypeString: "a string",
	openapi3.TypeInteger: "an integer", openapi3.TypeNumber: "a number", openapi3.TypeBoolean: "a boolean",
	openapi3.TypeNull: "null",
}

func typeNames(s *openapi3.Schema) string {
	if s == nil || s.Type == nil || len(s.Type.Slice()) == 0 {
		return "valid"
	}
	names := make([]string, 0, len(s.Type.Slice()))
	for _, t := range s.Type.Slice() {
		if n, ok := typeArticles[t]; ok {
			names = append(names, n)
		} else {
			names = append(names, t)
		}
	}
	return strings.Join(names, " or ")
}

// at walks the body value and its schema down ptr. The schema is nil where
// the document does not describe the value.
func at(body *openapi3.Schema, data []byte, ptr []string) (any, *openapi3.Schema, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, nil, false
	}
	s := body
	for _, tok := range ptr {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, nil, false
			}
			v = next
			if s != nil {
				switch {
				case s.Properties[tok] != nil:
					s = s.Properties[tok].Value
				case s.AdditionalProperties.Schema != nil:
					s = s.AdditionalProperties.Schema.Value
				default:
					s = nil
				}
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, nil, false
			}
			v = x[i]
			if s != nil && s.Items != nil {
				s = s.Items.Value
			} else {
				s = nil
			}
		default:
			return nil, nil, false
		}
	}
	return v, s, true
}

// unknownField names the first (in sorted order) property of the object at
// ptr that its schema does not declare.
func unknownField(body *openapi3.Schema, data []byte, ptr []string) (string, bool) {
	v, s, ok := at(body, data, ptr)
	obj, isObj := v.(map[string]any)
	if !ok || !isObj || s == nil {
		return "", false
	}
	var unknown []string
	for k := range obj {
		if _, declared := s.Properties[k]; !declared {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return "", false
	}
	slices.Sort(unknown)
	return unknown[0], true
}

// missingField names the first required property absent from the object at
// ptr, for validators that point at the object rather than at the property.
func missingField(body *openapi3.Schema, data []byte, ptr []string) (string, bool) {
	v, s, ok := at(body, data, ptr)
	obj, isObj := v.(map[string]any)
	if !ok || !isObj || s == nil {
		return "", false
	}
	for _, name := range s.Required {
		if _, present := obj[name]; !present {
			return name, true
		}
	}
	return "", false
}
