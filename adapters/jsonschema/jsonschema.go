package jsonschema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	js "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// Compiler compiles JSON Schema documents. It keeps no state between calls
// but its limits, so one value serves every goroutine.
type Compiler struct {
	limits schema.Limits
}

var _ ports.SchemaCompiler = (*Compiler)(nil)

// New returns a Compiler holding documents to limits (a zero field: its
// default, schema.DefaultLimits).
func New(limits schema.Limits) *Compiler { return &Compiler{limits: limits.WithDefaults()} }

// Limits are the limits Compile holds documents to (ports.SchemaCompiler).
func (c *Compiler) Limits() schema.Limits { return c.limits }

// resourceURL names the document being compiled. It is an absolute URL of
// a scheme no loader serves, so that a relative $ref ("other.json") resolves
// beside it and is refused instead of being read as a file next to the
// process; it is cut out of messages because users never wrote it.
const resourceURL = "mem://enrich/schema.json"

// maxProblems bounds the lines of one error: a model fed back a hundred
// lines does no better than one fed back twenty.
const maxProblems = 20

var printer = message.NewPrinter(language.English)

// Compile checks doc against the limits, then parses and compiles it. A
// document past a limit gives the domain's *schema.TooComplexError before
// any parsing; any other failure wraps ports.ErrInvalid. The library takes
// no context: ctx is checked between the steps (parse, compile, the cycle
// probes), and the limits bound each step (a document at every limit at
// once compiles in well under a second), so a request whose client left
// stops within one step, on this goroutine, and returns ctx.Err().
func (c *Compiler) Compile(ctx context.Context, doc json.RawMessage) (ports.Validator, error) {
	if err := c.limits.Check(doc); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := js.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: schema is not valid JSON: %v", ports.ErrInvalid, err)
	}
	switch v.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("%w: schema must be a JSON object or boolean", ports.ErrInvalid)
	}
	// A fresh compiler per document: the library's compiler caches every
	// resource it has seen, which would leak one organization's schema ids
	// into another's references.
	jc := js.NewCompiler()
	jc.DefaultDraft(js.Draft2020)
	jc.UseLoader(noLoader{})
	if err := jc.AddResource(resourceURL, v); err != nil {
		return nil, fmt.Errorf("%w: %s", ports.ErrInvalid, clean(err.Error()))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sch, err := jc.Compile(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ports.ErrInvalid, compileMessage(err))
	}
	msg, err := refCycle(ctx, sch, v)
	if err != nil {
		return nil, err
	}
	if msg != "" {
		return nil, fmt.Errorf("%w: schema: %s", ports.ErrInvalid, msg)
	}
	return &Validator{schema: sch}, nil
}

// refCycle finds a $ref loop that never reaches a keyword ({"$ref": "#"}).
// The library reports such loops only while validating, so every answer
// would fail with a message no model can act on; probing a few values here
// turns the common cases into a schema error instead.
func refCycle(ctx context.Context, sch *js.Schema, doc any) (string, error) {
	probe := map[string]any{}
	if m, ok := doc.(map[string]any); ok {
		props, _ := m["properties"].(map[string]any)
		for k := range props {
			probe[k] = nil
		}
	}
	for _, v := range []any{nil, map[string]any{}, []any{}, probe} {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		var ve *js.ValidationError
		if err := sch.Validate(v); errors.As(err, &ve) {
			if msg := findCycle(ve); msg != "" {
				return msg, nil
			}
		}
	}
	return "", ctx.Err()
}

func findCycle(e *js.ValidationError) string {
	if _, ok := e.ErrorKind.(*kind.RefCycle); ok {
		return clean(reason(e.ErrorKind))
	}
	for _, c := range e.Causes {
		if msg := findCycle(c); msg != "" {
			return msg
		}
	}
	return ""
}

// noLoader refuses every external document. The draft meta-schemas are
// built into the library and do not go through it.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %s is not allowed: only references inside the schema resolve", url)
}

func compileMessage(err error) string {
	var sve *js.SchemaValidationError
	var ve *js.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		lines := problems(ve)
		return "schema is not valid JSON Schema: " + strings.Join(lines, "; ")
	}
	var lue *js.LoadURLError
	if errors.As(err, &lue) && lue.Err != nil {
		return "schema: " + clean(lue.Err.Error())
	}
	return "schema: " + clean(err.Error())
}

// clean removes the internal resource name from library messages.
func clean(s string) string {
	s = strings.ReplaceAll(s, "'"+resourceURL+"#", "'#")
	s = strings.ReplaceAll(s, "\""+resourceURL+"#", "\"#")
	s = strings.ReplaceAll(s, resourceURL+"#", "#")
	s = strings.ReplaceAll(s, resourceURL, "#")
	return strings.ReplaceAll(s, "mem://enrich/", "")
}

// Validator checks decoded JSON values against one compiled schema. It is
// safe for concurrent use.
type Validator struct {
	schema *js.Schema
}

var _ ports.Validator = (*Validator)(nil)

// Validate returns nil when v (as decoded by encoding/json) satisfies the
// schema, or a *ValidationError listing each failing location.
func (v *Validator) Validate(value any) error {
	err := v.schema.Validate(value)
	if err == nil {
		return nil
	}
	var ve *js.ValidationError
	if !errors.As(err, &ve) {
		// Values encoding/json cannot produce (a Go struct, say) land here.
		return &ValidationError{Problems: []string{"/: " + err.Error()}}
	}
	return &ValidationError{Problems: problems(ve)}
}

// ValidationError lists why a value does not satisfy a schema, one
// "<instance path>: <reason>" per entry, sorted and without duplicates.
type ValidationError struct {
	Problems []string
}

// Error joins the problems one per line, so that the message can be fed back
// to a model as it is.
func (e *ValidationError) Error() string {
	return strings.Join(e.Problems, "\n")
}

// problems flattens the library's error tree into its leaves: the
// intermediate nodes ("allOf failed", "validation failed" at a $ref) only
// repeat what the leaves say.
func problems(ve *js.ValidationError) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(e *js.ValidationError)
	walk = func(e *js.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		line := pointer(e.InstanceLocation) + ": " + clean(reason(e.ErrorKind))
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	walk(ve)
	// The library visits object properties in map order; sorting makes the
	// message, and so the prompt of a retry, the same on every run.
	sort.Strings(out)
	if len(out) > maxProblems {
		n := len(out) - maxProblems
		out = append(out[:maxProblems:maxProblems], fmt.Sprintf("... and %d more", n))
	}
	return out
}

func reason(k js.ErrorKind) string {
	if k == nil {
		return "invalid"
	}
	if _, ok := k.(*kind.FalseSchema); ok {
		return "not allowed"
	}
	return k.LocalizedString(printer)
}

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		sb.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return sb.String()
}
