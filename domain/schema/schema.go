// Package schema holds saved schemas: JSON Schema (2020-12) documents that
// describe an enrichment's structured output, with the reference product's
// extensions (x-expertiseDomains, per-property flags).
package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxNameLen bounds a schema's name; MaxDescriptionLen its description.
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 10_000
)

// Schema is a saved schema of one organization.
type Schema struct {
	ID          string
	OrgID       string
	Name        string
	Description string
	// Content is the JSON Schema document: the working copy of a linked
	// schema. Set it with SetContent, which keeps ContentHash.
	Content json.RawMessage
	// ContentHash is ContentHash(Content).
	ContentHash string
	// Linked schemas keep a working copy (Content) and a published contract
	// (PublishedContent); see Contract.
	Linked bool
	// Tags are free labels; IsPinned lists the schema first.
	Tags     []string
	IsPinned bool
	// PublishedContent is the contract last published (nil: never), with
	// its hash and time. KeyLanguage locks the language of multilingual
	// database keys ("" when none is locked).
	PublishedContent json.RawMessage
	PublishedHash    string
	PublishedAt      *time.Time
	KeyLanguage      string
	// DeletedAt is set while the schema is in the trash (soft-deleted).
	DeletedAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ErrInvalid is wrapped by every validation failure of a schema document.
var ErrInvalid = errors.New("invalid schema")

// FieldError is a validation failure of one request field.
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Detail }
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// CheckShape validates what the enrichment needs beyond JSON Schema itself:
// a name, and a top-level object with properties.
func CheckShape(name string, content json.RawMessage) (map[string]any, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, invalid("name", "name is required")
	}
	if len(name) > MaxNameLen {
		return nil, invalid("name", "name is longer than %d characters", MaxNameLen)
	}
	var doc map[string]any
	if err := json.Unmarshal(content, &doc); err != nil || doc == nil {
		return nil, invalid("schema", "schema must be a JSON object")
	}
	if t, _ := doc["type"].(string); t != "object" {
		return nil, invalid("schema", "schema.type must be \"object\"")
	}
	props, ok := doc["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return nil, invalid("schema", "schema.properties must name at least one property")
	}
	return doc, nil
}

// ContentHash is the hex SHA-256 of a schema document with insignificant
// whitespace removed: two saves of the same document hash alike whatever
// their formatting, and any other change (key order included, which shows
// in prompts) hashes differently. A document that is not JSON hashes as its
// bytes.
func ContentHash(doc json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		b.Reset()
		b.Write(doc)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}
