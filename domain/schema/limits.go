package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The schema limits' defaults (config: ENRICH_SCHEMA_MAX_*). Compiling a
// JSON Schema costs far more than its size: the compiler's work grows with
// the square of the subschemas it holds, and with their depth (a document
// nested 3,000 deep, 120 KB, took minutes). Every document a caller or a
// model hands the service is measured against these before it is parsed
// into a tree or compiled.
const (
	// DefaultMaxDepth bounds the JSON nesting of objects and arrays: the
	// root object is depth 1, a property's schema under "properties" 3, so
	// 32 leaves room for about 15 levels of nested object properties.
	DefaultMaxDepth = 32
	// DefaultMaxProperties bounds the property definitions: the names
	// declared under "properties" and "patternProperties", at every depth.
	DefaultMaxProperties = 2_000
	// DefaultMaxSubschemas bounds the subschemas (objects and booleans in
	// a schema position: each property's schema, items, each allOf member,
	// each $defs entry...), the root included. It is what the compile time
	// grows with: a 2,000-property schema holds about 2,000 to 4,000, and
	// an allOf of 5,000 empty schemas compiles in a few hundred
	// milliseconds where 170,000 (which fit in the byte limit) take minutes.
	DefaultMaxSubschemas = 5_000
	// DefaultMaxBytes bounds the document's size: a 2,000-property schema
	// with a sentence of description and the extension keywords per
	// property is about 320 KB, and half the default body limit (1 MiB)
	// leaves the rest of a request its room.
	DefaultMaxBytes = 512 << 10
)

// Limits bound a schema document. A zero field takes its default
// (WithDefaults).
type Limits struct {
	MaxDepth      int
	MaxProperties int
	MaxSubschemas int
	MaxBytes      int
}

// DefaultLimits returns the limits' defaults.
func DefaultLimits() Limits {
	return Limits{MaxDepth: DefaultMaxDepth, MaxProperties: DefaultMaxProperties, MaxSubschemas: DefaultMaxSubschemas,
		MaxBytes: DefaultMaxBytes}
}

// WithDefaults fills l's zero (or negative) fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.MaxDepth, d.MaxDepth)
	fill(&l.MaxProperties, d.MaxProperties)
	fill(&l.MaxSubschemas, d.MaxSubschemas)
	fill(&l.MaxBytes, d.MaxBytes)
	return l
}

// Limit names one of the limits.
type Limit string

// The limits, by the names the API's error shows.
const (
	LimitDepth      Limit = "max_depth"
	LimitProperties Limit = "max_properties"
	LimitSubschemas Limit = "max_subschemas"
	LimitBytes      Limit = "max_bytes"
)

// Setting is the environment setting that changes the limit.
func (l Limit) Setting() string {
	switch l {
	case LimitDepth:
		return "ENRICH_SCHEMA_MAX_DEPTH"
	case LimitProperties:
		return "ENRICH_SCHEMA_MAX_PROPERTIES"
	case LimitSubschemas:
		return "ENRICH_SCHEMA_MAX_SUBSCHEMAS"
	case LimitBytes:
		return "ENRICH_SCHEMA_MAX_BYTES"
	}
	return ""
}

func (l Limit) what() string {
	switch l {
	case LimitDepth:
		return "schema nesting depth"
	case LimitProperties:
		return "schema property count"
	case LimitSubschemas:
		return "schema subschema count"
	}
	return "schema size in bytes"
}

// ErrTooComplex marks a schema past a limit (a *TooComplexError says
// which): 400 schema_too_complex.
var ErrTooComplex = errors.New("schema too complex")

// TooComplexError is a schema past one of its limits.
type TooComplexError struct {
	Limit Limit
	// Max is the limit's value.
	Max int
}

func (e *TooComplexError) Error() string {
	return fmt.Sprintf("%s exceeds %d (%s)", e.Limit.what(), e.Max, e.Limit.Setting())
}

func (e *TooComplexError) Unwrap() error { return ErrTooComplex }

// Check measures doc against l (its zero fields at their defaults) and
// returns a *TooComplexError for the first limit passed. It reads doc as a
// stream of tokens, once, and stops at the first limit passed: it never
// builds the tree, and it keeps one small frame per open container, at
// most MaxDepth of them. A document that is not JSON passes as far as it
// reads (the compiler reports it); only the limits are Check's.
//
// Depth is the JSON nesting of objects and arrays (the root object is 1),
// data included (enum, const, examples, x- extensions). Properties are the
// names under "properties" and "patternProperties" of a schema; subschemas
// are the objects and booleans in a schema position (the root; the value of
// items, not, additionalProperties and the other single-schema keywords;
// each member of allOf, anyOf, oneOf, prefixItems and array items; each
// entry of properties, patternProperties, $defs, definitions,
// dependentSchemas and dependencies).
func (l Limits) Check(doc []byte) error {
	l = l.WithDefaults()
	if len(doc) > l.MaxBytes {
		return &TooComplexError{Limit: LimitBytes, Max: l.MaxBytes}
	}
	c := checker{lim: l, dec: json.NewDecoder(bytes.NewReader(doc))}
	c.dec.UseNumber()
	return c.run()
}

// position is what a value is, by where it sits.
type position uint8

const (
	posData      position = iota // data: no subschema at or below it
	posSchema                    // a schema
	posSchemaMap                 // an object whose members are schemas (properties)
	posSchemaArr                 // an array whose items are schemas (allOf)
	posEither                    // a schema, or an array of schemas (items)
)

// frame is an open container.
type frame struct {
	pos position
	obj bool
	// props: the members are property definitions (properties,
	// patternProperties of a schema).
	props bool
	// key is the member name just read; keyed says the next token is its
	// value.
	key   string
	keyed bool
}

type checker struct {
	lim         Limits
	dec         *json.Decoder
	stack       []frame
	props, subs int
}

// schemaMaps are the keywords whose value is an object of schemas;
// schemaValued those whose value is a schema or an array of schemas.
var (
	schemaMaps = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependencies": true}
	schemaValued = map[string]bool{"items": true, "additionalItems": true, "prefixItems": true, "contains": true,
		"additionalProperties": true, "propertyNames": true, "not": true, "if": true, "then": true, "else": true,
		"allOf": true, "anyOf": true, "oneOf": true, "unevaluatedItems": true, "unevaluatedProperties": true,
		"contentSchema": true}
)

func (c *checker) run() error {
	for {
		tok, err := c.dec.Token()
		if err != nil {
			return nil // the end, or not JSON: the compiler says which
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			c.stack = c.stack[:len(c.stack)-1]
		} else if err := c.token(tok); err != nil {
			return err
		}
		if len(c.stack) == 0 {
			return nil // one value read; trailing data is the compiler's
		}
	}
}

// token reads a member name, a scalar or an opening delimiter.
func (c *checker) token(tok json.Token) error {
	n := len(c.stack)
	var top *frame
	if n > 0 {
		top = &c.stack[n-1]
		if top.obj && !top.keyed {
			top.key, top.keyed = tok.(string), true
			if top.props {
				if c.props++; c.props > c.lim.MaxProperties {
					return &TooComplexError{Limit: LimitProperties, Max: c.lim.MaxProperties}
				}
			}
			return nil
		}
	}
	pos := childPos(top)
	d, open := tok.(json.Delim)
	switch {
	case pos == posEither && open && d == '[':
		pos = posSchemaArr
	case pos == posEither:
		pos = posSchema
	case pos == posSchemaMap && !(open && d == '{'), pos == posSchema && open && d == '[':
		pos = posData // not what the keyword takes: the compiler refuses it
	}
	if _, isBool := tok.(bool); pos == posSchema && (isBool || open) {
		if c.subs++; c.subs > c.lim.MaxSubschemas {
			return &TooComplexError{Limit: LimitSubschemas, Max: c.lim.MaxSubschemas}
		}
	}
	if !open {
		return nil
	}
	if n+1 > c.lim.MaxDepth {
		return &TooComplexError{Limit: LimitDepth, Max: c.lim.MaxDepth}
	}
	props := pos == posSchemaMap && (top.key == "properties" || top.key == "patternProperties")
	c.stack = append(c.stack, frame{pos: pos, obj: d == '{', props: props})
	return nil
}

// childPos is the position of the value read next in top (nil: the root),
// and marks top's member, if any, read.
func childPos(top *frame) position {
	switch {
	case top == nil:
		return posSchema
	case !top.obj && top.pos == posSchemaArr:
		return posSchema
	case !top.obj:
		return posData
	}
	top.keyed = false
	switch top.pos {
	case posSchemaMap:
		return posSchema
	case posSchema:
		if schemaMaps[top.key] {
			return posSchemaMap
		}
		if schemaValued[top.key] {
			return posEither
		}
	}
	return posData
}
