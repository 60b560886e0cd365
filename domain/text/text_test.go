package text_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/text"
)

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		path   string // "" with ok
		key    bool
		reason text.Reason
		ok     bool
	}{
		{"plain", `{"a":"b","c":[1,"x",{"d":null}]}`, "", false, "", true},
		{"empty", ``, "", false, "", true},
		{"real pair", `{"a":"\ud83d\ude00 \uD83D\uDE00"}`, "", false, "", true},
		{"escaped replacement char is text", `{"a":"\ufffd"}`, "", false, "", true},
		{"raw replacement char is text", "{\"a\":\"\xef\xbf\xbd\"}", "", false, "", true},
		{"escaped backslash before u0000 is text", `{"a":"\\u0000"}`, "", false, "", true},
		{"NUL escape in value", `{"name":"a\u0000b"}`, "name", false, text.NUL, false},
		{"NUL escape upper hex", `{"name":"\U0000"}`, "", false, "", true}, // \U is not an escape: malformed, the decoder says so
		{"NUL escape in key", `{"entity_data":{"na\u0000me":"x"}}`, `entity_data.na\u0000me`, true, text.NUL, false},
		{"raw NUL in value", "{\"a\":[\"x\",\"y\x00\"]}", "a.1", false, text.NUL, false},
		{"lone high surrogate", `{"a":{"b":["x","\ud800"]}}`, "a.b.1", false, text.LoneSurrogate, false},
		{"lone low surrogate", `{"a":"\uDC00x"}`, "a", false, text.LoneSurrogate, false},
		{"high then high", `{"a":"\ud800\ud800\udc00"}`, "a", false, text.LoneSurrogate, false},
		{"high then NUL", `{"a":"\ud800\u0000"}`, "a", false, text.LoneSurrogate, false},
		{"high at end of doc", `{"a":"\ud800`, "a", false, text.LoneSurrogate, false},
		{"surrogate in key", `{"p":{"\ud800k":1}}`, `p.\ud800k`, true, text.LoneSurrogate, false},
		{"invalid byte in value", "{\"a\":\"\xff\"}", "a", false, text.InvalidUTF8, false},
		{"invalid byte in key", "{\"k\xfe\":1}", `k\xfe`, true, text.InvalidUTF8, false},
		{"CESU surrogate bytes", "[\"\xed\xa0\x80\"]", "0", false, text.InvalidUTF8, false},
		{"truncated rune", "[\"\xe2\x82\"]", "0", false, text.InvalidUTF8, false},
		{"first fault wins", `{"a":"ok","b":"\u0000","c":"\ud800"}`, "b", false, text.NUL, false},
		{"key path after escapes", `{"a\"b\n":{"c":"\u0000"}}`, "a\"b\n.c", false, text.NUL, false},
		{"root string", `"\u0000"`, "", false, text.NUL, false},
		{"deep", strings.Repeat("[", 50) + `"\u0000"` + strings.Repeat("]", 50), strings.TrimSuffix(strings.Repeat("0.", 50), "."), false, text.NUL, false},
		{"at encoding/json's depth limit", strings.Repeat("[", 10000) + `"\u0000"` + strings.Repeat("]", 10000), strings.TrimSuffix(strings.Repeat("0.", 10000), "."), false, text.NUL, false},
		{"past the depth limit the decoder refuses", strings.Repeat("[", 10001) + `"\u0000"` + strings.Repeat("]", 10001), "", false, "", true},
		{"after nested object", `{"a":{"b":1},"c":[{},[],"\u0000"]}`, "c.2", false, text.NUL, false},
		{"lost on syntax stops quietly", `{"a":,"b":"\u0000"}`, "", false, "", true},
		{"unterminated", `{"a":"abc`, "", false, "", true},
		{"bad escape", `{"a":"\x"}`, "", false, "", true},
		{"trailing value is scanned", `{} "\u0000"`, "", false, text.NUL, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f, ok := text.CheckJSON([]byte(tt.doc))
			is.Equal(ok, tt.ok)
			is.Equal(f.Path, tt.path)
			is.Equal(f.Key, tt.key)
			is.Equal(f.Reason, tt.reason)
			if !ok {
				is.True(f.Detail() != "")
				is.True(!strings.ContainsRune(f.Detail(), 0))
				is.True(utf8.ValidString(f.Detail()))
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		v      any
		path   string
		key    bool
		reason text.Reason
		ok     bool
	}{
		{"nil", nil, "", false, "", true},
		{"string", "fine", "", false, "", true},
		{"NUL string", "a\x00", "", false, text.NUL, false},
		{"invalid string", "a\xff", "", false, text.InvalidUTF8, false},
		{"raw surrogate bytes", "\xed\xa0\x80", "", false, text.InvalidUTF8, false},
		{"slice", []string{"a", "b\x00"}, "1", false, text.NUL, false},
		{"map key", map[string]any{"ok": 1, "b\x00d": 2}, `b\u0000d`, true, text.NUL, false},
		{"map value nested", map[string]any{"a": []any{1.0, map[string]any{"b": "\xff"}}}, "a.1.b", false, text.InvalidUTF8, false},
		{"string map", map[string]string{"a": "x", "b": "\x00"}, "b", false, text.NUL, false},
		{"raw JSON", json.RawMessage(`{"a":"\ud800"}`), "a", false, text.LoneSurrogate, false},
		{"raw JSON inside map", map[string]any{"doc": json.RawMessage(`{"a":"\u0000"}`)}, "doc.a", false, text.NUL, false},
		{"raw JSON root fault inside map", map[string]any{"doc": []byte(`"\u0000"`)}, "doc", false, text.NUL, false},
		{"sorted: first key in order", map[string]any{"b": "\x00", "a": "\xff"}, "a", false, text.InvalidUTF8, false},
		{"other types pass", struct{ A string }{"\x00"}, "", false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			f, ok := text.Check(tt.v)
			is.Equal(ok, tt.ok)
			is.Equal(f.Path, tt.path)
			is.Equal(f.Key, tt.key)
			is.Equal(f.Reason, tt.reason)
		})
	}
}

func TestCheckString(t *testing.T) {
	is := is.New(t)
	for _, s := range []string{"", "abc", "é", "\ufffd", "日本"} {
		_, ok := text.CheckString(s)
		is.True(ok)
	}
	r, ok := text.CheckString("\x00")
	is.True(!ok)
	is.Equal(r, text.NUL)
	r, ok = text.CheckString("\xc3")
	is.True(!ok)
	is.Equal(r, text.InvalidUTF8)
	is.Equal(len(text.Reasons()), 3)
}

func TestDetail(t *testing.T) {
	is := is.New(t)
	is.Equal(text.Fault{Path: "a.b", Reason: text.NUL}.Detail(), `field "a.b" holds a NUL character (U+0000), which is not accepted in text`)
	is.Equal(text.Fault{Path: `k\ud800`, Key: true, Reason: text.LoneSurrogate}.Detail(), `key "k\\ud800" holds an unpaired UTF-16 surrogate escape, which is not accepted in text`)
	is.True(strings.HasPrefix(text.Fault{Reason: text.InvalidUTF8}.Detail(), "the request holds"))
}

// FuzzCheckJSON holds CheckJSON to a reference built another way: encoding/
// json's tokenizer finds the strings and keys, their raw bytes are cut out
// of the document and judged through UTF-16 code units. On any input,
// valid JSON or not, CheckJSON must not panic; on valid JSON it must agree
// with the reference, and a document it passes must decode to text free of
// NUL.
func FuzzCheckJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a":"b"}`, `{"a":"\u0000"}`, `{"\u0000":1}`, `["\ud800"]`, `["\udc00"]`, `["\ud800\udc00"]`,
		`["\ud800\ud800\udc00"]`, `{"a":{"b":[1,2,{"c":"\uDBFF\uDFFF"}]}}`, "[\"\xff\"]", "{\"\xfe\":0}",
		"[\"\xed\xa0\x80\"]", `"\ufffd"`, `{"a\"\\b":["\u0000"]}`, `{"a":`, `[1,,]`, `{"a":"\u00`, `"\`,
		`{"email":"a\u0000@example.com","password":"pw","organization":"\ud800"}`,
		`{"name":"n","schema":{"type":"object","properties":{"x\u0000":{"type":"string","enum":["a","\udfff"]}}}}`,
		`{"entity_data":{"k":"v\u0000"},"schema_id":"s"}`, `[[[[[[[[[["\u0000"]]]]]]]]]]`, ` { } `, `nul`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, gotOK := text.CheckJSON(doc) // must not panic on anything
		if !json.Valid(doc) {
			return
		}
		want, wantOK := reference(t, doc)
		if gotOK != wantOK || got != want {
			t.Fatalf("CheckJSON(%q) = %+v, %v; reference %+v, %v", doc, got, gotOK, want, wantOK)
		}
		if gotOK {
			var v any
			dec := json.NewDecoder(bytes.NewReader(doc))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("valid JSON does not decode: %v", err)
			}
			if f, ok := text.Check(v); !ok {
				t.Fatalf("CheckJSON passed %q but its decoded value holds %+v", doc, f)
			}
		}
	})
}

// reference judges a valid JSON document.
func reference(t *testing.T, doc []byte) (text.Fault, bool) {
	type open struct {
		array   bool
		index   int
		key     string
		wantKey bool
	}
	var stack []open
	path := func(n int) []string {
		var p []string
		for _, o := range stack[:n] {
			if o.array {
				p = append(p, strconv.Itoa(o.index))
			} else {
				p = append(p, o.key)
			}
		}
		return p
	}
	begin := func() {
		if len(stack) > 0 && stack[len(stack)-1].array {
			stack[len(stack)-1].index++
		}
	}
	end := func() {
		if len(stack) > 0 && !stack[len(stack)-1].array {
			stack[len(stack)-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	prev := int64(0)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return text.Fault{}, true
		}
		if err != nil {
			t.Fatalf("reference: token: %v", err)
		}
		off := dec.InputOffset()
		raw := doc[prev:off]
		prev = off
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{', '[':
				begin()
				stack = append(stack, open{array: x == '[', index: -1, wantKey: x == '{'})
			default:
				stack = stack[:len(stack)-1]
				end()
			}
		case string:
			raw = raw[bytes.IndexByte(raw, '"')+1 : len(raw)-1]
			shown, reason := judge(raw)
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				if reason != "" {
					return text.Fault{Path: strings.Join(append(path(n-1), shown), "."), Key: true, Reason: reason}, false
				}
				stack[n-1].key, stack[n-1].wantKey = shown, false
				continue
			}
			begin()
			if reason != "" {
				return text.Fault{Path: strings.Join(path(len(stack)), "."), Reason: reason}, false
			}
			end()
		default:
			begin()
			end()
		}
	}
}

// judge decodes the raw bytes of a string token (without quotes) into UTF-16
// code units, then renders them, and names the first fault.
func judge(raw []byte) (string, text.Reason) {
	const badByte = 0x10000 // a unit that stands for an invalid byte; the byte is in the next slot
	var units []int
	for i := 0; i < len(raw); {
		if raw[i] == '\\' {
			if raw[i+1] == 'u' {
				n, _ := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
				units = append(units, int(n))
				i += 6
				continue
			}
			esc := map[byte]int{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
			units = append(units, esc[raw[i+1]])
			i += 2
			continue
		}
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			units = append(units, badByte, int(raw[i]))
		} else {
			for _, u := range utf16.Encode([]rune{r}) {
				units = append(units, int(u))
			}
		}
		i += n
	}
	var b strings.Builder
	var reason text.Reason
	fault := func(r text.Reason) {
		if reason == "" {
			reason = r
		}
	}
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u == badByte:
			fault(text.InvalidUTF8)
			b.WriteString(`\x` + strconv.FormatUint(uint64(units[i+1])+0x100, 16)[1:])
			i++
		case u == 0:
			fault(text.NUL)
			b.WriteString(`\u0000`)
		case u >= 0xD800 && u < 0xDC00 && i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] < 0xE000:
			b.WriteRune(utf16.DecodeRune(rune(u), rune(units[i+1])))
			i++
		case u >= 0xD800 && u < 0xE000:
			fault(text.LoneSurrogate)
			b.WriteString(`\u` + strconv.FormatUint(uint64(u), 16))
		default:
			b.WriteRune(rune(u))
		}
	}
	return b.String(), reason
}

func BenchmarkCheckJSON(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"entity_data":{`)
	for i := 0; doc.Len() < 1<<20; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`"key` + strconv.Itoa(i) + `":"a value with \"escapes\" and é and \ud83d\ude00"`)
	}
	doc.WriteString(`}}`)
	b.SetBytes(int64(doc.Len()))
	for b.Loop() {
		if _, ok := text.CheckJSON(doc.Bytes()); !ok {
			b.Fatal("fault")
		}
	}
}

// BenchmarkCheckJSONRecords scans the shape of a batch request: many small
// objects with short ASCII values, numbers, literals and nested arrays, so the
// scanner's state changes weigh more than its string loop.
func BenchmarkCheckJSONRecords(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"schema_id":"s","records":[`)
	for i := 0; doc.Len() < 1<<20; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`{"id":` + strconv.Itoa(i) + `,"name":"Acme Corp","tags":["a","b",null,true],"address":{"city":"Paris","zip":"75001"},"score":0.5}`)
	}
	doc.WriteString(`]}`)
	b.SetBytes(int64(doc.Len()))
	for b.Loop() {
		if _, ok := text.CheckJSON(doc.Bytes()); !ok {
			b.Fatal("fault")
		}
	}
}

func TestEscape(t *testing.T) {
	is := is.New(t)
	is.Equal(text.Escape("a\x00b\xffé"), `a\u0000b\xffé`)
	is.Equal(text.Escape("plain"), "plain")
}
