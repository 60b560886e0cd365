// Package fetch holds the rules of fetching a batch's entities from a URL
// (POST /api/batch/fetch): which URLs a request may name, and how a fetched
// document (a JSON array, an object wrapping one, NDJSON or CSV) becomes a
// list of entity objects. It does no I/O: the fetching itself is a port.
package fetch

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Limits of a fetch. DefaultMaxEntities is the batch limit when the
// configuration gives none (ENRICH_BATCH_MAX_ENTITIES).
const (
	DefaultMaxEntities = 1000
	MaxURLLength       = 2048
	// MaxHeaderValue bounds an auth secret or header name.
	MaxHeaderValue = 4096
)

// Format names how a document was read.
type Format string

// The formats a document may have.
const (
	JSON   Format = "json"
	NDJSON Format = "ndjson"
	CSV    Format = "csv"
)

// Errors of Parse; the caller names the request's url with them.
var (
	// ErrUnparseable means the document is none of the formats, or holds
	// something other than entity objects.
	ErrUnparseable = errors.New("the document is not a JSON array of objects, an object wrapping one, NDJSON or CSV")
	// ErrTooManyEntities means the document holds more entities than allowed.
	ErrTooManyEntities = errors.New("the document holds too many entities")
)

// wrappers are the keys of an object whose array holds the entities, in the
// order they are tried.
var wrappers = []string{"data", "results", "items"}

// CheckURL parses a request's URL: http or https, a host, no user:password
// part (credentials go in auth, where they are kept out of logs), at most
// MaxURLLength characters. Which addresses the host may reach is the
// fetcher's check, at dial time.
func CheckURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("url is required")
	}
	if len(raw) > MaxURLLength {
		return nil, fmt.Errorf("url is longer than %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("url is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("url must be an http or https URL")
	}
	if u.Hostname() == "" {
		return nil, errors.New("url has no host")
	}
	if u.User != nil {
		return nil, errors.New("url must not carry a user or password; use auth")
	}
	return u, nil
}

// Parse reads a fetched document into entity objects (each a JSON object,
// keys in document order). contentType (the response's Content-Type) picks
// the format: JSON types, NDJSON types (application/x-ndjson,
// application/jsonl, ...) and CSV types (text/csv, text/tab-separated-values)
// are read as such; anything else is told by the content: JSON when it
// starts with [ or {, else CSV. A JSON document with several top-level
// objects is read as NDJSON. More than max entities is ErrTooManyEntities.
func Parse(body []byte, contentType string, max int) ([]json.RawMessage, Format, error) {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	if !utf8.Valid(body) {
		return nil, "", fmt.Errorf("%w: it is not UTF-8 text", ErrUnparseable)
	}
	if max <= 0 {
		max = DefaultMaxEntities
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimSpace(body)
	switch {
	case isNDJSONType(mt):
		out, err := parseNDJSON(trimmed, max)
		return out, NDJSON, err
	case isCSVType(mt):
		comma := ','
		if mt == "text/tab-separated-values" {
			comma = '\t'
		}
		out, err := parseCSV(trimmed, comma, max)
		return out, CSV, err
	case isJSONType(mt), len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{'):
		return parseJSON(trimmed, max)
	}
	out, err := parseCSV(trimmed, sniffComma(trimmed), max)
	return out, CSV, err
}

func isJSONType(mt string) bool {
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

func isNDJSONType(mt string) bool {
	switch mt {
	case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines",
		"application/jsonlines", "application/json-seq", "application/x-json-stream":
		return true
	}
	return false
}

func isCSVType(mt string) bool {
	return mt == "text/csv" || mt == "application/csv" || mt == "text/tab-separated-values"
}

// parseJSON reads one JSON value: an array of objects, or an object holding
// one under a wrapper key. Several top-level values are NDJSON.
func parseJSON(b []byte, max int) ([]json.RawMessage, Format, error) {
	if len(b) == 0 {
		return nil, JSON, fmt.Errorf("%w: it is empty", ErrUnparseable)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil, JSON, fmt.Errorf("%w: %s", ErrUnparseable, jsonMessage(err))
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		if v[0] != '{' {
			return nil, JSON, fmt.Errorf("%w: data follows the JSON document", ErrUnparseable)
		}
		out, err := parseNDJSON(b, max) // several objects: one per line
		return out, NDJSON, err
	}
	if v[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, JSON, fmt.Errorf("%w: %s", ErrUnparseable, jsonMessage(err))
		}
		found := false
		for _, k := range wrappers {
			if inner, ok := obj[k]; ok && len(bytes.TrimSpace(inner)) > 0 && bytes.TrimSpace(inner)[0] == '[' {
				v, found = inner, true
				break
			}
		}
		if !found {
			return nil, JSON, fmt.Errorf("%w: the object has no array under data, results or items", ErrUnparseable)
		}
	}
	if bytes.TrimSpace(v)[0] != '[' {
		return nil, JSON, fmt.Errorf("%w: the JSON document is not an array", ErrUnparseable)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, JSON, fmt.Errorf("%w: %s", ErrUnparseable, jsonMessage(err))
	}
	if len(items) > max {
		return nil, JSON, tooMany(max)
	}
	for i, it := range items {
		if !isObject(it) {
			return nil, JSON, fmt.Errorf("%w: item %d is not an object", ErrUnparseable, i)
		}
		items[i] = compact(it)
	}
	return nonNil(items), JSON, nil
}

// parseNDJSON reads one JSON object per line; blank lines are skipped.
func parseNDJSON(b []byte, max int) ([]json.RawMessage, error) {
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), len(b)+1)
	line := 0
	for sc.Scan() {
		line++
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		if !json.Valid(l) {
			return nil, fmt.Errorf("%w: line %d is not one JSON value", ErrUnparseable, line)
		}
		if !isObject(l) {
			return nil, fmt.Errorf("%w: line %d is not an object", ErrUnparseable, line)
		}
		if len(out) == max {
			return nil, tooMany(max)
		}
		out = append(out, compact(l))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnparseable, err)
	}
	return nonNil(out), nil
}

// parseCSV reads a header row and records: each record is an object of the
// header's keys and the record's values, as strings. Every row must have the
// header's number of fields; header names must be distinct and not empty.
func parseCSV(b []byte, comma rune, max int) ([]json.RawMessage, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.Comma = comma
	r.ReuseRecord = false
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: it is empty", ErrUnparseable)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnparseable, csvMessage(err))
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("%w: CSV column %d has no name", ErrUnparseable, i+1)
		}
		if seen[h] {
			return nil, fmt.Errorf("%w: CSV column %q appears twice", ErrUnparseable, h)
		}
		seen[h] = true
		header[i] = h
	}
	out := []json.RawMessage{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrUnparseable, csvMessage(err))
		}
		if len(out) == max {
			return nil, tooMany(max)
		}
		var buf bytes.Buffer
		buf.WriteByte('{')
		for i, h := range header {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(h)
			v, _ := json.Marshal(rec[i])
			buf.Write(k)
			buf.WriteByte(':')
			buf.Write(v)
		}
		buf.WriteByte('}')
		out = append(out, buf.Bytes())
	}
	return out, nil
}

// sniffComma picks the CSV delimiter from the header line: a comma unless
// the line has none and has semicolons or tabs.
func sniffComma(b []byte) rune {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if bytes.ContainsRune(line, ',') {
		return ','
	}
	if bytes.ContainsRune(line, '\t') {
		return '\t'
	}
	if bytes.ContainsRune(line, ';') {
		return ';'
	}
	return ','
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

func compact(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return append(json.RawMessage(nil), b...)
	}
	return buf.Bytes()
}

func nonNil(s []json.RawMessage) []json.RawMessage {
	if s == nil {
		return []json.RawMessage{}
	}
	return s
}

func tooMany(max int) error {
	return fmt.Errorf("%w: more than %d", ErrTooManyEntities, max)
}

// jsonMessage and csvMessage say where a document went wrong, without the
// document's content.
func jsonMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the JSON ends early"
	}
	return "invalid JSON"
}

func csvMessage(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("CSV line %d: %v", pe.Line, pe.Err)
	}
	return "invalid CSV"
}

// AuthType is how a fetch authenticates (the reference's auth_type).
type AuthType string

// The auth types.
const (
	AuthNone   AuthType = "none"
	AuthBearer AuthType = "bearer"
	AuthAPIKey AuthType = "api_key"
	AuthBasic  AuthType = "basic"
)

// AuthTypes lists the auth types.
func AuthTypes() []AuthType { return []AuthType{AuthNone, AuthBearer, AuthAPIKey, AuthBasic} }

// DefaultAPIKeyHeader is the API key's header when none is named.
const DefaultAPIKeyHeader = "X-API-Key"

// reservedHeaders are headers an API key may not be sent as: the client
// sets them, or they would change the request's meaning.
var reservedHeaders = map[string]bool{"host": true, "content-length": true, "transfer-encoding": true,
	"connection": true, "upgrade": true, "te": true, "trailer": true, "proxy-authorization": true, "cookie": true}

// CheckHeaderName accepts an HTTP header name (an RFC 9110 token) that is
// not one the client must set itself.
func CheckHeaderName(name string) error {
	if name == "" || len(name) > 256 {
		return errors.New("must be a header name of 1 to 256 characters")
	}
	for _, c := range name {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return fmt.Errorf("must be an HTTP header name (no %q)", c)
		}
	}
	if reservedHeaders[strings.ToLower(name)] {
		return fmt.Errorf("%s cannot carry an API key", name)
	}
	return nil
}

// CheckHeaderValue accepts a header value (a secret, a user name): not
// empty, at most MaxHeaderValue bytes, no control characters (a line break
// would start another header).
func CheckHeaderValue(v string) error {
	if v == "" {
		return errors.New("is required")
	}
	if len(v) > MaxHeaderValue {
		return fmt.Errorf("is longer than %d bytes", MaxHeaderValue)
	}
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return errors.New("must not hold control characters")
		}
	}
	return nil
}
