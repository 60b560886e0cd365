package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// RestoreWindow is how long a deleted schema can be restored: the
// reference's "restorable within 30 seconds". Past it the schema stays in
// the trash until it is deleted permanently.
const RestoreWindow = 30 * time.Second

// Tag limits: at most MaxTags tags of at most MaxTagLen characters each.
const (
	MaxTags   = 20
	MaxTagLen = 50
)

// Lifecycle errors: each refuses a transition that the schema's state does
// not allow (HTTP 409 with its own code).
var (
	// ErrInUse refuses deleting a schema something uses (a linked
	// database, later a benchmark) unless the caller cascades.
	ErrInUse = errors.New("schema in use")
	// ErrRestoreExpired refuses restoring a schema deleted longer ago than
	// the restore window.
	ErrRestoreExpired = errors.New("restore window expired")
	// ErrNotLinked refuses publishing a schema that feeds no database.
	ErrNotLinked = errors.New("schema not linked")
	// ErrLinked refuses purging the enrichment data of a schema that is
	// linked to a database.
	ErrLinked = errors.New("schema linked")
	// ErrConfirmTransforms refuses a publish whose diff transforms data
	// (a re-key, a type change) without confirm_transforms.
	ErrConfirmTransforms = errors.New("publish needs confirm_transforms")
	// ErrKeyLanguageRequired refuses publishing a schema whose database
	// key is multilingual while no key language is locked.
	ErrKeyLanguageRequired = errors.New("key language required")
	// ErrKeyLanguageLocked refuses a key language other than the locked one.
	ErrKeyLanguageLocked = errors.New("key language locked")
)

// PublishState is the reference's publish_state of a schema.
type PublishState string

// The publish states.
const (
	// Draft: not linked to a database; edits take effect at once.
	Draft PublishState = "draft"
	// Unpublished: linked, never published; the working copy is the
	// contract until the first publish.
	Unpublished PublishState = "unpublished"
	// InSync: linked, and the working copy is the published contract.
	InSync PublishState = "in_sync"
	// Dirty: linked, with structural edits waiting for a publish.
	Dirty PublishState = "dirty"
)

// PublishState computes the schema's publish_state from Linked and the
// hashes of the working copy and the published contract.
func (s *Schema) PublishState() PublishState {
	switch {
	case !s.Linked:
		return Draft
	case s.PublishedContent == nil:
		return Unpublished
	case s.PublishedHash == s.contentHash():
		return InSync
	}
	return Dirty
}

func (s *Schema) contentHash() string {
	if s.ContentHash == "" {
		return ContentHash(s.Content)
	}
	return s.ContentHash
}

// Contract is the document enrichment runs against: the published contract
// of a linked schema that has been published, else the working copy (a
// draft's edits take effect at once, and a linked schema that was never
// published runs on its working copy until its first publish).
func (s *Schema) Contract() json.RawMessage {
	if s.Linked && s.PublishedContent != nil {
		return s.PublishedContent
	}
	return s.Content
}

// SetContent replaces the working copy and its hash.
func (s *Schema) SetContent(doc json.RawMessage) {
	s.Content = doc
	s.ContentHash = ContentHash(doc)
}

// Edit replaces the working copy at now. On a linked, published schema an
// edit that is neutral against the published contract (descriptions,
// examples and other annotations only) reaches the contract at once, as
// the reference's neutral edits propagate without a publish; anything
// structural waits for Publish (the schema becomes dirty).
func (s *Schema) Edit(doc json.RawMessage, now time.Time) {
	s.SetContent(doc)
	s.UpdatedAt = now
	if s.Linked && s.PublishedContent != nil && s.PublishedHash != s.ContentHash &&
		Compare(s.PublishedContent, doc).Classification == Neutral {
		s.PublishedContent = bytes.Clone(doc)
		s.PublishedHash = s.ContentHash
	}
}

// Deleted reports whether the schema is in the trash.
func (s *Schema) Deleted() bool { return s.DeletedAt != nil }

// Delete moves the schema to the trash at now; deleting a deleted schema
// changes nothing.
func (s *Schema) Delete(now time.Time) {
	if s.DeletedAt != nil {
		return
	}
	t := now
	s.DeletedAt = &t
	s.UpdatedAt = now
}

// RestorableUntil is when the trashed schema stops being restorable.
func (s *Schema) RestorableUntil(window time.Duration) time.Time {
	if s.DeletedAt == nil {
		return time.Time{}
	}
	return s.DeletedAt.Add(window)
}

// Restore takes the schema out of the trash at now, within window of its
// deletion (ErrRestoreExpired after). Restoring a live schema changes
// nothing.
func (s *Schema) Restore(now time.Time, window time.Duration) error {
	if s.DeletedAt == nil {
		return nil
	}
	if now.After(s.RestorableUntil(window)) {
		return fmt.Errorf("schema %s was deleted at %s; it was restorable for %s: %w",
			s.ID, s.DeletedAt.UTC().Format(time.RFC3339), window, ErrRestoreExpired)
	}
	s.DeletedAt = nil
	s.UpdatedAt = now
	return nil
}

// Uses lists what uses the schema, in words ("a linked database"); a
// schema in use is deleted only with cascade. Benchmarks will add theirs.
func (s *Schema) Uses() []string {
	var out []string
	if s.Linked {
		out = append(out, "a linked database")
	}
	return out
}

// Link links the schema to a database at now; Unlink undoes it. Linking
// keeps any earlier published contract.
func (s *Schema) Link(now time.Time) {
	if !s.Linked {
		s.Linked, s.UpdatedAt = true, now
	}
}

// Unlink unlinks the schema from its databases at now.
func (s *Schema) Unlink(now time.Time) {
	if s.Linked {
		s.Linked, s.UpdatedAt = false, now
	}
}

// PurgeCheck refuses purging the enrichment data of a linked schema: its
// databases hold the entities the records describe.
func (s *Schema) PurgeCheck() error {
	if s.Linked {
		return fmt.Errorf("schema %s is linked to a database; unlink it first: %w", s.ID, ErrLinked)
	}
	return nil
}

// PropertyCount is the number of top-level properties of the working copy.
func (s *Schema) PropertyCount() int {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(s.Content, &doc)
	return len(doc.Properties)
}

// CheckTags normalises tags: each is trimmed, must be non-empty and at most
// MaxTagLen characters; repeats are dropped (first kept); at most MaxTags.
func CheckTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	seen := map[string]bool{}
	for i, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return nil, invalid(fmt.Sprintf("tags.%d", i), "tags.%d: a tag must not be empty", i)
		case utf8.RuneCountInString(t) > MaxTagLen:
			return nil, invalid(fmt.Sprintf("tags.%d", i), "tags.%d: a tag is at most %d characters", i, MaxTagLen)
		case seen[t]:
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) > MaxTags {
		return nil, invalid("tags", "tags: at most %d tags", MaxTags)
	}
	return out, nil
}

// CheckName trims a schema name and checks it (required, at most
// MaxNameLen characters).
func CheckName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", invalid("name", "name is required")
	}
	if len(name) > MaxNameLen {
		return "", invalid("name", "name is longer than %d characters", MaxNameLen)
	}
	return name, nil
}

var suffix = regexp.MustCompile(`^(.*) \((\d+)\)$`)

// UniqueName returns name if no live schema of the organization has it
// (taken lists their names), else the first free "base (n)" with n from 2,
// where base is name without a " (n)" suffix of its own: "Company" taken
// gives "Company (2)", and duplicating "Company (2)" gives "Company (3)".
// Names compare exactly. The result stays within MaxNameLen.
func UniqueName(name string, taken []string) string {
	used := make(map[string]bool, len(taken))
	for _, t := range taken {
		used[t] = true
	}
	if !used[name] {
		return name
	}
	base := name
	if m := suffix.FindStringSubmatch(name); m != nil {
		base = m[1]
	}
	for n := 2; ; n++ {
		tail := " (" + strconv.Itoa(n) + ")"
		b := base
		for len(b)+len(tail) > MaxNameLen {
			_, size := utf8.DecodeLastRuneInString(b)
			b = b[:len(b)-size]
		}
		if c := b + tail; !used[c] {
			return c
		}
	}
}

// NameBase is the part of name that UniqueName keeps, for a store lookup
// of the names that may collide.
func NameBase(name string) string {
	if m := suffix.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}
