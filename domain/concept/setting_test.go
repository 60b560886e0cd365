package concept_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func TestCheckModelSetting(t *testing.T) {
	tests := []struct {
		name   string
		next   string
		held   []string
		locked bool
	}{
		{name: "no concepts: any model", next: "p::b", held: nil},
		{name: "clearing is always allowed", next: "", held: []string{"p::a"}},
		{name: "the concepts' own model", next: "p::a", held: []string{"p::a"}},
		{name: "a switch with concepts", next: "p::b", held: []string{"p::a"}, locked: true},
		{name: "concepts of two models", next: "p::a", held: []string{"p::a", "p::b"}, locked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := concept.CheckModelSetting(tt.next, tt.held)
			is.Equal(errors.Is(err, concept.ErrModelLocked), tt.locked)
			is.Equal(err != nil, tt.locked)
		})
	}
}
