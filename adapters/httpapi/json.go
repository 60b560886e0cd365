package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/entityenrich/enrich/app"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// errTooLarge marks a body past the route's limit.
var errTooLarge = errors.New("request body too large")

// decode reads a JSON body into v, rejecting unknown fields, trailing data and
// wrong types with an error naming the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return app.Invalid("", "request body must hold a single JSON value")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &mbe):
		return errTooLarge
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			field = "body"
		}
		return app.Invalid(field, "field %q must be %s, not %s", field, jsonType(ute.Type.Kind().String()), ute.Value)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return app.Invalid("", "request body is not valid JSON")
	case errors.Is(err, io.EOF):
		return app.Invalid("", "request body is empty")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return app.Invalid(name, "unknown field %q", name)
	}
	return app.Invalid("", "request body is invalid: %v", err)
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	}
	return fmt.Sprintf("of type %s", kind)
}
