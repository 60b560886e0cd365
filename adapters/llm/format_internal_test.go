package llm

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"
)

// setResponseFormat adds the format to the client's body, replaces one the
// body already has, and refuses a body that is not a JSON object.
func TestSetResponseFormat(t *testing.T) {
	rf := json.RawMessage(`{"type":"json_schema","json_schema":{"name":"out","strict":true}}`)
	cases := []struct {
		name, body string
		want       map[string]any // the body's members after the call; nil: an error
	}{
		{"added", `{"model":"m","messages":[]}`, map[string]any{"model": "m", "messages": []any{}}},
		{"trailing newline", "{\"model\":\"m\"}\n", map[string]any{"model": "m"}},
		{"empty object", `{ }`, map[string]any{}},
		{"JSON mode's replaced", `{"model":"m","response_format":{"type":"json_object"},"n":1}`, map[string]any{"model": "m", "n": 1.0}},
		{"another format replaced", `{"model":"m","response_format":{"type":"text"}}`, map[string]any{"model": "m"}},
		{"JSON mode's text in a string", `{"c":"\"response_format\":{\"type\":\"json_object\"}","response_format":{"type":"json_object"}}`,
			map[string]any{"c": `"response_format":{"type":"json_object"}`}},
		{"the key's text in a string", `{"content":"say \"response_format\": now"}`, map[string]any{"content": `say "response_format": now`}},
		{"not an object", `[1]`, nil},
		{"broken", `{"model":`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			out, err := setResponseFormat([]byte(c.body), rf)
			if c.want == nil {
				is.True(err != nil)
				return
			}
			is.NoErr(err)
			var got map[string]any
			is.NoErr(json.Unmarshal(out, &got))
			var format any
			is.NoErr(json.Unmarshal(rf, &format))
			c.want["response_format"] = format
			is.Equal(got, c.want)
		})
	}
}

// The client's body is not re-encoded: JSON mode's format is replaced in
// place, byte for byte around it.
func TestSetResponseFormatInPlace(t *testing.T) {
	is := is.New(t)
	rf := json.RawMessage(`{"type":"json_schema"}`)
	out, err := setResponseFormat([]byte(`{"model":"m","content":"<b>","response_format":{"type":"json_object"},"n":1}`), rf)
	is.NoErr(err)
	is.Equal(string(out), `{"model":"m","content":"<b>","response_format":{"type":"json_schema"},"n":1}`)
}
