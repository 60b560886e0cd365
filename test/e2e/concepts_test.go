package e2e_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

type conceptAlias struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	IsCanonical bool   `json:"is_canonical"`
}

type conceptDetail struct {
	ID            string         `json:"id"`
	CanonicalText string         `json:"canonical_text"`
	AliasCount    int            `json:"alias_count"`
	Aliases       []conceptAlias `json:"aliases"`
	Dims          int            `json:"dims"`
	Records       []any          `json:"records"`
}

type conceptProbe struct {
	Outcome    string   `json:"outcome"`
	MatchedID  *string  `json:"matched_id"`
	Similarity *float64 `json:"similarity"`
	Detail     *string  `json:"detail"`
	Neighbors  []struct {
		SemanticID string  `json:"semantic_id"`
		Similarity float64 `json:"similarity"`
	} `json:"neighbors"`
}

// grayPair is two texts whose built-in embeddings fall in the gray band
// [0.80, 0.92): checked here, so a change of the embedder shows.
const grayA, grayB = "Globex Industries", "Globex Industry"

// TestConceptsHTTP drives the vocabulary over HTTP on every store:
// create, alias_of ("IBM" then "International Business Machines
// Corp."), the three probe outcomes, listing, types, neighbours, the
// review list after an escalated create, duplicates, aliases and
// canonical, delete-impact and delete.
func TestConceptsHTTP(t *testing.T) {
	sim := concept.Cosine(concept.NgramEmbed(concept.Normalize(grayA), concept.NgramDims),
		concept.NgramEmbed(concept.Normalize(grayB), concept.NgramDims))
	if sim < concept.DefaultJudgeFloor || sim >= concept.DefaultAccept {
		t.Fatalf("%q and %q: cosine %v is not in the gray band", grayA, grayB, sim)
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cfg := testConfig(b.dsn(t))
			cfg.EmbeddingModel = "builtin::ngram-384"
			s := start(t, cfg)
			home, other := s.register("concepts@example.com"), s.register("other-concepts@example.com")
			conceptsFlow(t, s, home.key, other.key)
		})
	}
}

func conceptsFlow(t *testing.T, s *service, key, otherKey string) {
	is := is.New(t)
	const base = "/api/semantic-concepts"
	var ibm conceptDetail
	is.Equal(s.call("POST", base, key, obj{"text": "IBM", "concept_type": "company"}, &ibm), 201)
	is.Equal(ibm.CanonicalText, "IBM")
	is.Equal(ibm.Dims, concept.NgramDims)
	is.Equal(len(ibm.Records), 0)
	// The same text again: 409 concept_exists with the probe.
	var exists struct {
		Code  string       `json:"code"`
		Probe conceptProbe `json:"probe"`
	}
	is.Equal(s.call("POST", base, key, obj{"text": " ibm ", "concept_type": "company"}, &exists), 409)
	is.Equal(exists.Code, "concept_exists")
	is.Equal(exists.Probe.Outcome, "exact_hit")
	is.Equal(*exists.Probe.MatchedID, ibm.ID)
	// An alias: then its text is an exact hit of IBM.
	var aliased conceptDetail
	is.Equal(s.call("POST", base, key, obj{"text": "International Business Machines Corp.", "alias_of": ibm.ID}, &aliased), 201)
	is.Equal(aliased.ID, ibm.ID)
	is.Equal(aliased.AliasCount, 2)
	is.Equal(s.call("POST", base, key, obj{"text": "x", "alias_of": "nope"}, nil), 404)
	is.Equal(s.call("POST", base, key, obj{"text": "IBM", "alias_of": ibm.ID, "concept_type": "company"}, nil), 201) // already its own

	var p conceptProbe
	is.Equal(s.call("POST", base+"/probe", key, obj{"text": "  INTERNATIONAL business   machines corp. ", "concept_type": "company"}, &p), 200)
	is.Equal(p.Outcome, "exact_hit")
	is.Equal(*p.MatchedID, ibm.ID)
	var machines conceptDetail
	is.Equal(s.call("POST", base, key, obj{"text": "International Business Machines", "concept_type": "company"}, &machines), 201)
	is.Equal(s.call("POST", base+"/probe", key, obj{"text": "International Business Machine", "concept_type": "company"}, &p), 200)
	is.Equal(p.Outcome, "match")
	is.Equal(*p.MatchedID, machines.ID)
	is.True(*p.Similarity >= concept.DefaultAccept)
	is.Equal(s.call("POST", base+"/probe", key, obj{"text": "Umbrella", "concept_type": "company", "neighbors": 3}, &p), 200)
	is.Equal(p.Outcome, "no_match")
	is.True(p.MatchedID == nil)
	is.True(len(p.Neighbors) <= 3)
	// A match at the threshold is refused as a create too.
	is.Equal(s.call("POST", base, key, obj{"text": "International Business Machine", "concept_type": "company"}, &exists), 409)
	is.Equal(exists.Probe.Outcome, "match")

	// The gray band: minted, and the pair goes to review.
	var globex, industry conceptDetail
	is.Equal(s.call("POST", base, key, obj{"text": grayA, "concept_type": "company"}, &globex), 201)
	is.Equal(s.call("POST", base, key, obj{"text": grayB, "concept_type": "company"}, &industry), 201)
	var review struct {
		Total int `json:"total"`
		Items []struct {
			AID        string  `json:"a_id"`
			BID        string  `json:"b_id"`
			Reason     string  `json:"reason"`
			Similarity float64 `json:"similarity"`
		} `json:"items"`
	}
	is.Equal(s.call("GET", base+"/review", key, nil, &review), 200)
	is.Equal(review.Total, 1)
	is.Equal(review.Items[0].Reason, "escalated")
	is.Equal(review.Items[0].AID, industry.ID)
	is.Equal(review.Items[0].BID, globex.ID)
	var dups struct {
		Items []struct {
			AID string `json:"a_id"`
			BID string `json:"b_id"`
		} `json:"items"`
	}
	is.Equal(s.call("GET", base+"/duplicates", key, nil, &dups), 200)
	is.Equal(len(dups.Items), 1)
	is.Equal(dups.Items[0].AID+dups.Items[0].BID == globex.ID+industry.ID || dups.Items[0].AID+dups.Items[0].BID == industry.ID+globex.ID, true)
	is.Equal(s.call("GET", base+"/duplicates?threshold=0.5&band_width=0.7", key, nil, nil), 400)

	conceptsReadsAndEdits(t, s, key, otherKey, ibm, globex, industry)
}

func conceptsReadsAndEdits(t *testing.T, s *service, key, otherKey string, ibm, globex, industry conceptDetail) {
	is := is.New(t)
	const base = "/api/semantic-concepts"
	var list struct {
		Total int             `json:"total"`
		Items []conceptDetail `json:"items"`
	}
	is.Equal(s.call("GET", base+"?sort_by=canonical_text&sort_order=asc&limit=2", key, nil, &list), 200)
	is.Equal(list.Total, 4)
	is.Equal(len(list.Items), 2)
	is.Equal(list.Items[0].CanonicalText, grayA)
	is.Equal(s.call("GET", base+"?search=business&concept_types=company", key, nil, &list), 200)
	is.Equal(list.Total, 2)
	is.Equal(s.call("GET", base+"?sort_by=nope", key, nil, nil), 400)
	is.Equal(s.call("GET", base+"?limit=0", key, nil, nil), 400)
	var types []struct {
		ConceptType  string `json:"concept_type"`
		ConceptCount int    `json:"concept_count"`
		Dims         int    `json:"dims"`
	}
	is.Equal(s.call("GET", base+"/types", key, nil, &types), 200)
	is.Equal(len(types), 1)
	is.Equal(types[0].ConceptCount, 4)
	var near struct {
		FocusID string `json:"focus_id"`
		Items   []struct {
			SemanticID string  `json:"semantic_id"`
			Similarity float64 `json:"similarity"`
		} `json:"items"`
	}
	is.Equal(s.call("GET", base+"/"+globex.ID+"/neighbors?limit=1", key, nil, &near), 200)
	is.Equal(near.FocusID, globex.ID)
	is.Equal(len(near.Items), 1)
	is.Equal(near.Items[0].SemanticID, industry.ID) // itself left out
	// Another organization sees none of it.
	is.Equal(s.call("GET", base+"/"+ibm.ID, otherKey, nil, nil), 404)
	is.Equal(s.call("GET", base+"/"+ibm.ID+"/neighbors", otherKey, nil, nil), 404)
	is.Equal(s.call("DELETE", base+"/"+ibm.ID, otherKey, nil, nil), 404)

	// Aliases: promote the long name, then the last alias stays.
	var got conceptDetail
	is.Equal(s.call("GET", base+"/"+ibm.ID, key, nil, &got), 200)
	long := got.Aliases[1]
	is.Equal(s.call("PUT", base+"/"+ibm.ID+"/canonical/"+long.ID, key, nil, nil), 204)
	is.Equal(s.call("GET", base+"/"+ibm.ID, key, nil, &got), 200)
	is.Equal(got.CanonicalText, "International Business Machines Corp.")
	is.Equal(s.call("DELETE", base+"/"+ibm.ID+"/aliases/"+got.Aliases[0].ID, key, nil, nil), 204)
	is.Equal(s.call("DELETE", base+"/"+ibm.ID+"/aliases/"+long.ID, key, nil, nil), 409) // the last one
	is.Equal(s.call("DELETE", base+"/"+ibm.ID+"/aliases/nope", key, nil, nil), 404)
	is.Equal(s.call("PUT", base+"/"+ibm.ID+"/canonical/nope", key, nil, nil), 404)

	// Delete: the impact first, then the delete drops the review pair.
	var impact struct {
		ConceptCount    int      `json:"concept_count"`
		RecordLinkCount int      `json:"record_link_count"`
		SchemaNames     []string `json:"schema_names"`
	}
	is.Equal(s.call("POST", base+"/delete-impact", key, obj{"ids": []string{globex.ID, "nope"}}, &impact), 200)
	is.Equal(impact.ConceptCount, 1)
	is.Equal(impact.RecordLinkCount, 0)
	is.Equal(s.call("POST", base+"/delete", key, obj{}, nil), 400)
	var del struct {
		DeletedCount int `json:"deleted_count"`
	}
	is.Equal(s.call("POST", base+"/delete", key, obj{"ids": []string{globex.ID}}, &del), 200)
	is.Equal(del.DeletedCount, 1)
	is.Equal(s.call("POST", base+"/delete", key, obj{"ids": []string{globex.ID}}, &del), 200)
	is.Equal(del.DeletedCount, 0)
	var review struct {
		Total int `json:"total"`
	}
	is.Equal(s.call("GET", base+"/review", key, nil, &review), 200)
	is.Equal(review.Total, 0)
	is.Equal(s.call("DELETE", base+"/"+industry.ID, key, nil, &del), 200)
	is.Equal(del.DeletedCount, 1)
	is.Equal(s.call("DELETE", base+"/"+industry.ID, key, nil, nil), 404)
	is.Equal(s.call("GET", base+"/"+industry.ID, key, nil, nil), 404)
}
