package relmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrValue is wrapped by every value that cannot be rendered for its
// column: a NUL byte, invalid UTF-8, a number that is not one, a value of
// the wrong JSON type, a malformed date or uuid.
var ErrValue = errors.New("value cannot be rendered")

// ValueError names the property (dotted path) whose value was refused.
type ValueError struct {
	Path   string
	Detail string
}

func (e *ValueError) Error() string { return e.Path + ": " + e.Detail }
func (e *ValueError) Unwrap() error { return ErrValue }

func refuse(format string, args ...any) error {
	return &ValueError{Detail: fmt.Sprintf(format, args...)}
}

// QuoteString renders s as a SQL string literal. A string without a
// backslash is '...' with every single quote doubled, which reads the same
// whether standard_conforming_strings is on (the default since PostgreSQL
// 9.1) or off. A string with a backslash is E'...' with backslashes and
// quotes doubled: an escape string, which also reads the same under either
// setting. So the literal never depends on the consumer's session. NUL
// (which PostgreSQL text cannot hold) and invalid UTF-8 are refused.
func QuoteString(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", refuse("a NUL character cannot be stored in PostgreSQL text")
	}
	if !utf8.ValidString(s) {
		return "", refuse("the value is not valid UTF-8")
	}
	q := strings.ReplaceAll(s, "'", "''")
	if strings.IndexByte(s, '\\') < 0 {
		return "'" + q + "'", nil
	}
	return "E'" + strings.ReplaceAll(q, `\`, `\\`) + "'", nil
}

// jsonNumber is the JSON number grammar: the only text a numeric literal
// may carry.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// uuidText is a canonical (hyphenated, any case) UUID.
var uuidText = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// maxExponent bounds a number's exponent.
const maxExponent = 1000

// maxNumberLen bounds a numeric literal's text (numeric's own limit is far
// above any enrichment value; the bound keeps a hostile one small).
const maxNumberLen = 400

// Literal renders a decoded JSON value (decoded with UseNumber: string,
// json.Number, bool, nil, map[string]any, []any) as a SQL literal of
// column type typ, always with an explicit cast ('x'::date, NULL::bigint)
// so that it is typed in a VALUES list as in an INSERT. Numbers are
// validated against the JSON grammar and the column's range and quoted, so
// no sign or exponent can combine with the surrounding SQL.
func Literal(v any, typ string) (string, error) {
	cast := "::" + typ
	if v == nil {
		return "NULL" + cast, nil
	}
	if typ == TypeJSONB {
		return jsonbLiteral(v)
	}
	text, err := scalarText(v, typ)
	if err != nil {
		return "", err
	}
	q, err := QuoteString(text)
	if err != nil {
		return "", err
	}
	return q + cast, nil
}

func jsonbLiteral(v any) (string, error) {
	if err := checkStrings(v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", refuse("the value is not JSON: %v", err)
	}
	q, err := QuoteString(strings.TrimSuffix(b.String(), "\n"))
	if err != nil {
		return "", err
	}
	return q + "::" + TypeJSONB, nil
}

// checkStrings refuses NUL anywhere in a JSON value (jsonb refuses \u0000)
// and numbers outside the grammar.
func checkStrings(v any) error {
	switch x := v.(type) {
	case string:
		_, err := QuoteString(x)
		return err
	case json.Number:
		_, err := numberText(x, TypeNumeric)
		return err
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return refuse("%v is not a JSON number", x)
		}
	case map[string]any:
		for k, e := range x {
			if err := checkStrings(k); err != nil {
				return err
			}
			if err := checkStrings(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := checkStrings(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalarText is the text of a scalar value for a column of type typ.
func scalarText(v any, typ string) (string, error) {
	switch base(typ) {
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		return "", refuse("expected a boolean, got %s", kind(v))
	case TypeBigint, "integer", "smallint", TypeNumeric, TypeDouble:
		return numberText(v, typ)
	}
	s, ok := textOf(v)
	if !ok {
		return "", refuse("expected a scalar, got %s", kind(v))
	}
	return s, checkFormat(s, typ)
}

func textOf(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// checkFormat refuses a value its typed column would refuse at apply time:
// better an error here, naming the property, than a quarantined batch.
func checkFormat(s, typ string) error {
	if n := length(typ); n > 0 && utf8.RuneCountInString(s) > n {
		// an explicit cast would truncate silently
		return refuse("%q is longer than %s allows", clip(s), typ)
	}
	switch base(typ) {
	case TypeUUID:
		if !uuidText.MatchString(s) {
			return refuse("%q is not a UUID", clip(s))
		}
	case TypeDate:
		if d, err := time.Parse(time.DateOnly, s); err != nil || d.Year() < 1 {
			return refuse("%q is not a date (YYYY-MM-DD, year 1 or later)", clip(s))
		}
	case TypeTimestamp:
		if d, err := time.Parse(time.RFC3339Nano, s); err != nil || d.Year() < 1 {
			return refuse("%q is not an RFC 3339 date-time", clip(s))
		}
	case "time":
		if !timeText.MatchString(s) {
			return refuse("%q is not a time of day (HH:MM[:SS[.ffffff]])", clip(s))
		}
	}
	return nil
}

// timeText is a time of day PostgreSQL's time type reads (a zone is
// accepted and ignored by it).
var timeText = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$`)

// length is the n of varchar(n) and char(n); 0 otherwise.
func length(typ string) int {
	i := strings.IndexByte(typ, '(')
	if i < 0 || !strings.HasSuffix(typ, ")") {
		return 0
	}
	n, _ := strconv.Atoi(typ[i+1 : len(typ)-1])
	return n
}

// numberText validates a number (or a string holding one) for a numeric
// column: the JSON grammar, an integer within range for the integer types,
// a finite double for double precision.
func numberText(v any, typ string) (string, error) {
	s, ok := textOf(v)
	if _, isBool := v.(bool); !ok || isBool {
		return "", refuse("expected a number, got %s", kind(v))
	}
	if len(s) > maxNumberLen || !jsonNumber.MatchString(s) {
		return "", refuse("%q is not a number", clip(s))
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		// Bounded before any arithmetic: 1e999999999 would otherwise be
		// expanded in memory, and numeric refuses it anyway.
		if e, err := strconv.Atoi(s[i+1:]); err != nil || e > maxExponent || e < -maxExponent {
			return "", refuse("%q has an exponent beyond ±%d", clip(s), maxExponent)
		}
	}
	switch base(typ) {
	case TypeBigint, "integer", "smallint":
		bits := map[string]int{TypeBigint: 64, "integer": 32, "smallint": 16}[base(typ)]
		r, ok := new(big.Rat).SetString(s)
		if !ok || !r.IsInt() || r.Num().BitLen() >= bits {
			return "", refuse("%q is not an integer of %d bits", clip(s), bits)
		}
		return r.Num().String(), nil
	case TypeDouble:
		if f, err := strconv.ParseFloat(s, 64); err != nil || math.IsInf(f, 0) {
			return "", refuse("%q is out of range for double precision", clip(s))
		}
	}
	return s, nil
}

// base is a type without its length modifier: varchar(20) -> varchar.
func base(typ string) string {
	if i := strings.IndexByte(typ, '('); i >= 0 {
		return typ[:i]
	}
	return typ
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
