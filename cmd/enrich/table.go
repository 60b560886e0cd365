package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// tw writes aligned columns.
type tw struct{ *tabwriter.Writer }

func newTW(w io.Writer) *tw { return &tw{tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)} }

// row writes one line of cells.
func (t *tw) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = cell(c)
	}
	fmt.Fprintln(t, strings.Join(s, "\t"))
}

// cell renders a value for a table: strings as they are, null as "-",
// objects as compact JSON.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case *string:
		if x == nil {
			return "-"
		}
		return cell(*x)
	case []string:
		return strings.Join(x, ",")
	case float64:
		return fmt.Sprint(x)
	case json.RawMessage:
		if len(x) == 0 || string(x) == "null" {
			return "-"
		}
		var s string
		if json.Unmarshal(x, &s) == nil {
			return cell(s)
		}
		return string(x)
	case fmt.Stringer:
		return x.String()
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	}
	return fmt.Sprint(v)
}

// fields writes an object's fields as KEY VALUE lines, in key order, with
// nested objects flattened to dotted keys.
func (t *tw) fields(prefix string, obj map[string]any) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m, ok := obj[k].(map[string]any); ok && len(m) > 0 {
			t.fields(prefix+k+".", m)
			continue
		}
		t.row(prefix+k, obj[k])
	}
}
