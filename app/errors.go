package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// Error is a failure the caller should see as it is: Detail is shown to the
// client, Code is a stable machine-readable code, and Kind (a ports or access
// sentinel) decides the status.
type Error struct {
	Kind   error
	Code   string
	Detail string
	// Field names the request field at fault, when there is one.
	Field string
	// RetryAfter, when set, tells the client when to try again.
	RetryAfter time.Duration
	// Paths lists the offending paths of the request's data, when there
	// are several (input_contract_unsatisfied).
	Paths []string
	// Limit is the schema limit passed (schema_too_complex).
	Limit *schema.TooComplexError
}

func (e *Error) Error() string { return e.Detail }
func (e *Error) Unwrap() error { return e.Kind }

// Invalid returns a 400-class error naming a field.
func Invalid(field, format string, args ...any) error {
	return &Error{Kind: ports.ErrInvalid, Field: field, Detail: fmt.Sprintf(format, args...), Code: "invalid_request"}
}

// coded returns an error of kind with a stable code.
func coded(kind error, code, format string, args ...any) error {
	return &Error{Kind: kind, Code: code, Detail: fmt.Sprintf(format, args...)}
}

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// at names the request field at fault.
func (e *Error) at(field string) *Error {
	e.Field = field
	return e
}

// ErrNotSupported marks a request field whose capability the service does
// not have yet: 400 not_supported_yet naming the field.
var ErrNotSupported = errors.New("not supported yet")

// NotSupported is a not_supported_yet refusal naming field (for the doors'
// own fields, as Invalid).
func NotSupported(field, format string, args ...any) error {
	return notSupported(field, format, args...)
}

func notSupported(field, format string, args ...any) error {
	return &Error{Kind: ErrNotSupported, Code: "not_supported_yet", Field: field, Detail: fmt.Sprintf(format, args...)}
}
