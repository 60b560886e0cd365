package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// TestConceptMergeHostileInput: ids with NUL or lone surrogates, missing,
// empty, too long or unknown fields are 400 naming the field; a concept
// merged into itself 400, across types 409, another organization's 404;
// an oversized body 413; and nothing is merged by any of them.
func TestConceptMergeHostileInput(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			home := s.register("home@example.com")
			other := s.register("other@example.com")
			mk := func(org, typ, text string) string {
				id := fmt.Sprintf("hostile-%s-%d", strings.ReplaceAll(text, " ", "-"), time.Now().UnixNano())
				_, err := s.srv.Stores.Concepts.CreateConcept(context.Background(), ports.NewConcept{ID: id, OrgID: org, Type: typ,
					AliasID: id + "-a", Text: text, Origin: concept.OriginManual, CreatedAt: time.Now()})
				is.NoErr(err)
				return id
			}
			w, l := mk(home.orgID, "company", "Acme"), mk(home.orgID, "company", "Acme Corp International")
			pub := mk(home.orgID, "publisher", "Acme Press")
			theirs := mk(other.orgID, "company", "Globex")
			cases := []struct {
				name   string
				body   any
				status int
				field  string
				code   string
			}{
				{"NUL in the winner", `{"winner_id": "a\u0000", "loser_id": "` + l + `"}`, 400, "winner_id", ""},
				{"lone surrogate in the loser", `{"winner_id": "` + w + `", "loser_id": "\ud800"}`, 400, "loser_id", ""},
				{"no loser", obj{"winner_id": w}, 400, "", ""},
				{"empty winner", obj{"winner_id": "", "loser_id": l}, 400, "", ""},
				{"an id too long", obj{"winner_id": strings.Repeat("x", 300), "loser_id": l}, 400, "", ""},
				{"an unknown field", obj{"winner_id": w, "loser_id": l, "extra": 1}, 400, "", ""},
				{"self", obj{"winner_id": w, "loser_id": w}, 400, "loser_id", "merge_same_concept"},
				{"two types", obj{"winner_id": w, "loser_id": pub}, 409, "loser_id", "merge_type_mismatch"},
				{"another organization's loser", obj{"winner_id": w, "loser_id": theirs}, 404, "", ""},
				{"an unknown winner", obj{"winner_id": "nope", "loser_id": l}, 404, "", ""},
				{"an oversized body", obj{"winner_id": strings.Repeat("x", 2<<20), "loser_id": l}, 413, "", ""},
			}
			for _, path := range []string{"/api/semantic-concepts/merge-impact", "/api/semantic-concepts/merge"} {
				for _, c := range cases {
					var e apiError
					if st := s.call("POST", path, home.key, c.body, &e); st != c.status {
						t.Fatalf("%s %s: %d %+v, want %d", path, c.name, st, e, c.status)
					}
					if (c.field != "" && e.Field != c.field) || (c.code != "" && e.Code != c.code) {
						t.Fatalf("%s %s: %+v, want field %q code %q", path, c.name, e, c.field, c.code)
					}
				}
			}
			for _, id := range []string{w, l, pub} {
				_, err := s.srv.Stores.Concepts.GetConcept(context.Background(), home.orgID, id)
				is.NoErr(err) // nothing merged
			}
			var res struct {
				AliasesMoved int `json:"aliases_moved"`
			}
			is.Equal(s.call("POST", "/api/semantic-concepts/merge", home.key, obj{"winner_id": w, "loser_id": l}, &res), 200)
			is.Equal(res.AliasesMoved, 1)
			is.Equal(s.call("POST", "/api/semantic-concepts/merge", home.key, obj{"winner_id": w, "loser_id": l}, nil), 404) // once
		})
	}
}
