package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// CodeSchemaTooComplex is the 400 of a schema past one of the schema
// limits (schema.Limits): the detail names the limit, its value and its
// setting, and the error's Limit says which.
const CodeSchemaTooComplex = "schema_too_complex"

// tooComplex is the answer to a schema of field refused by the limits
// (nil when err is not that refusal).
func tooComplex(field string, err error) error {
	var tc *schema.TooComplexError
	if !errors.As(err, &tc) {
		return nil
	}
	return &Error{Kind: schema.ErrTooComplex, Code: CodeSchemaTooComplex, Field: field, Detail: field + ": " + tc.Error(), Limit: tc}
}

// checkLimits holds a schema that a path takes without compiling it (an
// inline schema refused for now, a duplicate's or a publish's stored
// document, a split's input) to the compiler's limits: the compiler holds
// every other path to them (ports.SchemaCompiler).
func checkLimits(c ports.SchemaCompiler, field string, doc []byte) error {
	return tooComplex(field, c.Limits().Check(doc))
}

// compileError is the answer to a failed compilation of field's schema:
// schema_too_complex, or the request's context error as it is (the
// caller went away: not the schema's fault), or nil for the caller to word
// the schema's own fault.
func compileError(ctx context.Context, field string, err error) error {
	if e := tooComplex(field, err); e != nil {
		return e
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	return nil
}
