package relmap

import (
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// dbTypes maps the schema's generic db_type to PostgreSQL.
var dbTypes = map[string]string{
	"text": TypeText, "varchar": "varchar", "char": "char", "uuid": TypeUUID, "date": TypeDate,
	"timestamp": TypeTimestamp, "time": "time", "smallint": "smallint", "integer": TypeInteger,
	"bigint": TypeBigint, "numeric": TypeNumeric, "double": TypeDouble,
}

// formats maps a string property's format to PostgreSQL. email, uri and
// time stay text (time values carry offsets the time type drops).
var formats = map[string]string{
	"date": TypeDate, "date-time": TypeTimestamp, "uuid": TypeUUID,
}

// ColumnType is the column type of a property schema (already dereferenced):
// db_type first, then format, then type; anything that is not one scalar
// type (objects without a projection, mixed types, arrays kept whole) is
// jsonb.
func ColumnType(p map[string]any) string {
	if dt, _ := p["db_type"].(string); dt != "" {
		if t, ok := dbTypes[dt]; ok {
			if n, ok := p["db_type_length"].(float64); ok && n >= 1 && n <= 10485760 && (dt == "varchar" || dt == "char") {
				return fmt.Sprintf("%s(%d)", t, int(n))
			}
			return t
		}
	}
	switch scalarType(p) {
	case "string":
		if f, _ := p["format"].(string); formats[f] != "" {
			return formats[f]
		}
		return TypeText
	case "integer":
		return TypeBigint
	case "number":
		return TypeNumeric
	case "boolean":
		return TypeBoolean
	}
	return TypeJSONB
}

// scalarType is the one non-null JSON type of p ("" when there is none,
// several, or it is not a scalar). A $ref to $enums and an enum of
// strings are strings.
func scalarType(p map[string]any) string {
	if ref, _ := p["$ref"].(string); strings.HasPrefix(ref, "#/$enums/") {
		return "string"
	}
	var ts []string
	switch t := p["type"].(type) {
	case string:
		ts = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				ts = append(ts, s)
			}
		}
	}
	if len(ts) == 0 {
		if _, ok := p["enum"]; ok {
			return "string"
		}
		return ""
	}
	if len(ts) != 1 {
		return ""
	}
	switch ts[0] {
	case "string", "integer", "number", "boolean":
		return ts[0]
	}
	return ""
}

// nullable reports whether the schema lets the value be null.
func nullable(p map[string]any) bool {
	return p["nullable"] == true || jsondoc.HasType(p, "null")
}

// projectable is an object schema with properties: flattened or a child
// table rather than one jsonb column.
func projectable(p map[string]any) bool {
	if p == nil || p["multilingual"] == true {
		return false
	}
	props, _ := p["properties"].(map[string]any)
	return len(props) > 0 && (jsondoc.HasType(p, "object") || p["type"] == nil)
}

// filterableType is a type whose values are worth a filter index.
func filterableType(t string) bool {
	switch base(t) {
	case TypeBoolean, TypeDate, TypeTimestamp, TypeUUID, TypeBigint, TypeInteger, "smallint", TypeNumeric, TypeDouble, "time":
		return true
	}
	return false
}

// textType is a type indexed by hash (no btree entry size limit).
func textType(t string) bool {
	switch base(t) {
	case TypeText, "varchar", "char":
		return true
	}
	return false
}
