package dbsync

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/entityenrich/enrich/domain/delta"
)

// Defaults of a registration's fields (WIRE.md §8.3 DatabaseSyncCreateRequest).
const (
	DefaultPageLimit            = 100
	DefaultOnGaps               = SkipChildren
	DefaultPKStrategy           = Surrogate
	DefaultIndexScalars         = IndexFilterable
	DefaultNotifyDebounceS      = 30
	DefaultMaxThresholdTimeoutS = 300
)

// Bounds of the fields.
const (
	// MaxNameLen bounds a registration's display name (characters).
	MaxNameLen = 200
	// MaxNotifyDebounceS bounds the quiet period before a notification
	// (one hour); 0 notifies at once.
	MaxNotifyDebounceS = 3600
	// MinThresholdTimeoutS and MaxThresholdTimeoutS bound the debounce's
	// hard cap (one second to one day). The cap is never below the
	// debounce itself.
	MinThresholdTimeoutS = 1
	MaxThresholdTimeoutS = 86400
	// MaxKeyLanguageLen bounds key_language (a BCP 47 tag).
	MaxKeyLanguageLen = 35
)

// ErrInvalid is under every FieldError.
var ErrInvalid = errors.New("invalid database registration")

// FieldError names the request field that is wrong (HTTP 400).
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Fields are a registration's settable fields as a request carries them:
// nil is absent (a create takes the default, an update keeps the value).
type Fields struct {
	Name                 *string
	Dialect              *string
	PageLimit            *int
	PurgeOnAck           *bool
	PurgeEntityState     *bool
	OnGaps               *OnGaps
	PKStrategy           *PKStrategy
	IndexScalars         *IndexScalars
	NotifyDebounceS      *int
	MaxThresholdTimeoutS *int
	KeyLanguage          *string
	PropagateNotNull     *bool
}

// New returns a registration of orgID with f over the defaults, validated.
// It has no links yet.
func New(id, orgID string, f Fields, now time.Time) (*Database, error) {
	if f.Name == nil {
		return nil, invalid("name", "name is required")
	}
	d := &Database{ID: id, OrgID: orgID, Dialect: Dialect, PageLimit: DefaultPageLimit, OnGaps: DefaultOnGaps,
		PKStrategy: DefaultPKStrategy, IndexScalars: DefaultIndexScalars, NotifyDebounceS: DefaultNotifyDebounceS,
		MaxThresholdTimeoutS: DefaultMaxThresholdTimeoutS, CreatedAt: now, UpdatedAt: now}
	if err := d.Apply(f, now); err != nil {
		return nil, err
	}
	return d, nil
}

// Apply sets the present fields and validates the result; on an error d is
// unchanged.
func (d *Database) Apply(f Fields, now time.Time) error {
	next := *d
	set(&next.Name, f.Name)
	set(&next.Dialect, f.Dialect)
	set(&next.PageLimit, f.PageLimit)
	set(&next.PurgeOnAck, f.PurgeOnAck)
	set(&next.PurgeEntityState, f.PurgeEntityState)
	set(&next.OnGaps, f.OnGaps)
	set(&next.PKStrategy, f.PKStrategy)
	set(&next.IndexScalars, f.IndexScalars)
	set(&next.NotifyDebounceS, f.NotifyDebounceS)
	set(&next.MaxThresholdTimeoutS, f.MaxThresholdTimeoutS)
	set(&next.KeyLanguage, f.KeyLanguage)
	set(&next.PropagateNotNull, f.PropagateNotNull)
	next.Name = strings.TrimSpace(next.Name)
	next.KeyLanguage = strings.TrimSpace(next.KeyLanguage)
	if err := next.Validate(); err != nil {
		return err
	}
	next.UpdatedAt = now
	*d = next
	return nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Validate checks every field, naming the first that is wrong.
func (d *Database) Validate() error {
	switch {
	case d.Name == "":
		return invalid("name", "name is required")
	case utf8.RuneCountInString(d.Name) > MaxNameLen:
		return invalid("name", "name is longer than %d characters", MaxNameLen)
	case !printable(d.Name):
		return invalid("name", "name holds control characters or invalid UTF-8")
	case d.Dialect != Dialect:
		return invalid("dialect", "dialect must be %q", Dialect)
	case d.PageLimit < delta.MinLimit || d.PageLimit > delta.MaxLimit:
		return invalid("page_limit", "page_limit must be between %d and %d", delta.MinLimit, delta.MaxLimit)
	case !oneOf(d.OnGaps, RejectEntity, SkipChildren, AcceptPartial):
		return invalid("on_gaps", "on_gaps must be reject_entity, skip_children or accept_partial")
	case !oneOf(d.PKStrategy, Surrogate, Natural):
		return invalid("pk_strategy", "pk_strategy must be surrogate or natural")
	case !oneOf(d.IndexScalars, IndexNone, IndexKeys, IndexFilterable, IndexAll):
		return invalid("index_scalars", "index_scalars must be none, keys, filterable or all")
	case d.NotifyDebounceS < 0 || d.NotifyDebounceS > MaxNotifyDebounceS:
		return invalid("notify_debounce_s", "notify_debounce_s must be between 0 and %d", MaxNotifyDebounceS)
	case d.MaxThresholdTimeoutS < MinThresholdTimeoutS || d.MaxThresholdTimeoutS > MaxThresholdTimeoutS:
		return invalid("max_threshold_timeout_s", "max_threshold_timeout_s must be between %d and %d", MinThresholdTimeoutS, MaxThresholdTimeoutS)
	case d.MaxThresholdTimeoutS < d.NotifyDebounceS:
		return invalid("max_threshold_timeout_s", "max_threshold_timeout_s must not be below notify_debounce_s (%d)", d.NotifyDebounceS)
	case len(d.KeyLanguage) > MaxKeyLanguageLen || !languageTag(d.KeyLanguage):
		return invalid("key_language", "key_language must be a language tag such as en or pt-BR")
	}
	return nil
}

func oneOf[T comparable](v T, allowed ...T) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// languageTag accepts "" and tags of letters and digits in subtags of 1 to
// 8 joined by '-' (BCP 47's syntax, loosely), the first all letters.
func languageTag(s string) bool {
	if s == "" {
		return true
	}
	for i, sub := range strings.Split(s, "-") {
		if len(sub) < 1 || len(sub) > 8 {
			return false
		}
		for _, r := range sub {
			letter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
			if !letter && (i == 0 || r < '0' || r > '9') {
				return false
			}
		}
	}
	return true
}

// ShapeShipped reports whether any link shipped its DDL.
func (d *Database) ShapeShipped() bool {
	for _, l := range d.Links {
		if l.Shipped != nil {
			return true
		}
	}
	return false
}

// SchemaIDs are the linked schemas, in link order.
func (d *Database) SchemaIDs() []string {
	out := make([]string, len(d.Links))
	for i, l := range d.Links {
		out[i] = l.SchemaID
	}
	return out
}

// Clone returns a deep copy of d (links and their shipped maps are
// shared read-only values: a Map is replaced, never edited in place).
func (d *Database) Clone() *Database {
	c := *d
	c.Links = append([]Link(nil), d.Links...)
	return &c
}

// ErrLocked is a change of a projection option (pk_strategy,
// propagate_not_null, key_language) after the registration's DDL shipped:
// the consumer's tables are keyed and constrained by it, and changing it
// needs a reload (HTTP 409 projection_locked).
var ErrLocked = errors.New("projection option locked after the DDL shipped")

// CheckLocked refuses f when it changes an option the shipped DDL fixed.
func (d *Database) CheckLocked(f Fields) error {
	if !d.ShapeShipped() {
		return nil
	}
	switch {
	case f.PKStrategy != nil && *f.PKStrategy != d.PKStrategy:
		return fmt.Errorf("pk_strategy: %w", ErrLocked)
	case f.PropagateNotNull != nil && *f.PropagateNotNull != d.PropagateNotNull:
		return fmt.Errorf("propagate_not_null: %w", ErrLocked)
	case f.KeyLanguage != nil && strings.TrimSpace(*f.KeyLanguage) != d.KeyLanguage:
		return fmt.Errorf("key_language: %w", ErrLocked)
	}
	return nil
}
