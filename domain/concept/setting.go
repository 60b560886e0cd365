package concept

import (
	"errors"
	"fmt"
)

// ErrModelLocked refuses an organization's embedding-model switch while it
// has concepts embedded by another model: their vectors would no longer be
// comparable with the new model's. A migration moves them instead.
var ErrModelLocked = errors.New("embedding model locked by existing concepts")

// CheckModelSetting says whether an organization whose concepts are
// embedded by the models held may set its embedding model to next: it may
// always clear it (next ""), and set a model only when no concept of
// another model exists (reference: once concepts exist the setting can
// only be cleared, never switched).
func CheckModelSetting(next string, held []string) error {
	if next == "" {
		return nil
	}
	for _, m := range held {
		if m != next {
			return fmt.Errorf("%w: concepts exist under %s", ErrModelLocked, m)
		}
	}
	return nil
}
