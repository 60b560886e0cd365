package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/sample"
)

// The sandbox's sample generation (ports.TaskSampleGeneration): it reads the
// call's sample.Params from the prompt and answers a sample that fits the
// entity type and fields asked, different per instance index and the same
// for the same call. Sample 1 of a job may ask clarification questions, by
// one rule:
//   - an entity type that says nothing of what it is ("thing", "item",
//     "object", "entity", "record", "data", ...) asks what kind it is;
//   - a requested field named "size" or "value" asks what it measures.
//
// The answers (or the defaults) shape the sample: the kind picks the
// default fields and names, a field's reading picks its values.
// sandbox::flaky answers an empty sample first (the retry repairs it),
// sandbox::broken always does.

// vagueTypes are entity types that say nothing of what the entity is.
var vagueTypes = []string{"thing", "things", "item", "items", "object", "objects", "entity", "entities", "record",
	"records", "stuff", "data", "something", "anything", "example", "sample", "samples"}

// kindOf is the kind an entity type names (org, person, product, place) or
// "generic".
func kindOf(entityType string) string {
	t := strings.ToLower(entityType)
	for _, k := range []struct {
		kind  string
		words []string
	}{
		{"org", []string{"company", "companies", "organization", "organisation", "business", "startup", "firm", "brand", "vendor", "supplier", "employer"}},
		{"person", []string{"person", "people", "employee", "author", "customer", "user", "contact", "artist", "member", "patient", "student"}},
		{"product", []string{"product", "book", "movie", "film", "car", "device", "phone", "laptop", "game", "wine", "recipe", "album"}},
		{"place", []string{"city", "country", "place", "restaurant", "hotel", "venue", "location", "airport"}},
	} {
		for _, w := range k.words {
			if strings.Contains(t, w) {
				return k.kind
			}
		}
	}
	return "generic"
}

var kindFields = map[string][]string{
	"org":     {"name", "industry", "founded_year", "employee_count", "headquarters_city", "website"},
	"person":  {"full_name", "occupation", "birth_year", "nationality", "email"},
	"product": {"name", "brand", "category", "price", "release_year"},
	"place":   {"name", "country", "population", "description"},
	"generic": {"name", "description", "category", "created_year"},
}

var kindNames = map[string][]string{
	"org":     {"Northwind Traders", "Acme Robotics", "Bluefin Analytics", "Cedar & Stone Partners", "Helios Energy", "Quillon Software", "Marlow Logistics", "Verdant Foods"},
	"person":  {"Ada Lindqvist", "Rafael Moreno", "Mei Tanaka", "Jonas Becker", "Amara Okafor", "Lucía Ferreira", "Tomás Novak", "Priya Raman"},
	"product": {"Aurora X2", "Trailblazer 40L", "Lumen Desk Lamp", "Nimbus Kettle", "Orbit Earbuds", "Summit Hiking Boot", "Pixel Frame", "Cascade Blender"},
	"place":   {"Port Aldane", "Vellmoor", "Santa Ilia", "Kestrel Bay", "Oranjeveld", "Mirefield", "Castelmonte", "Lindholm"},
	"generic": {"Alpha", "Bravo", "Cobalt", "Delta", "Ember", "Fjord", "Garnet", "Harbor"},
}

var (
	industries = []string{"logistics", "software", "renewable energy", "food processing", "biotechnology", "retail", "consulting"}
	cities     = []string{"Lyon", "Rotterdam", "Austin", "Osaka", "Porto", "Leipzig", "Calgary", "Turin"}
	countries  = []string{"France", "Netherlands", "United States", "Japan", "Portugal", "Germany", "Canada", "Italy"}
	jobs       = []string{"data engineer", "architect", "nurse", "product manager", "journalist", "chemist", "teacher"}
	categories = []string{"outdoor", "kitchen", "electronics", "office", "sports", "home", "travel"}
	brands     = []string{"Norvik", "Calder", "Ostra", "Pell", "Brightline", "Tamsin", "Vero"}
)

// kindQuestion asks what a vague entity type is; its options are kinds.
func kindQuestion(entityType string) job.SampleQuestion {
	return job.SampleQuestion{ID: "entity_kind", Label: "Entity kind",
		Text: fmt.Sprintf("What kind of %s should the samples describe?", strings.TrimSpace(entityType)),
		Options: []job.SampleOption{{ID: "product", Label: "A physical product"}, {ID: "org", Label: "An organization"},
			{ID: "person", Label: "A person"}, {ID: "place", Label: "A place"}},
		DefaultOptionID: "product"}
}

// fieldQuestion asks what an ambiguous field measures.
func fieldQuestion(field string) (job.SampleQuestion, bool) {
	q := job.SampleQuestion{ID: "field_" + strings.ToLower(field), Label: field}
	switch strings.ToLower(field) {
	case "size":
		q.Text = fmt.Sprintf("What does %q measure?", field)
		q.Options = []job.SampleOption{{ID: "dimensions", Label: "Physical dimensions"}, {ID: "count", Label: "A count (people, items)"}}
		q.DefaultOptionID = "dimensions"
	case "value":
		q.Text = fmt.Sprintf("What does %q hold?", field)
		q.Options = []job.SampleOption{{ID: "money", Label: "A monetary amount"}, {ID: "rating", Label: "A rating from 1 to 5"}}
		q.DefaultOptionID = "money"
	default:
		return q, false
	}
	return q, true
}

// sampleQuestions are the questions the rule raises for p.
func sampleQuestions(p sample.Params) []job.SampleQuestion {
	var qs []job.SampleQuestion
	if slices.Contains(vagueTypes, strings.ToLower(strings.TrimSpace(p.EntityType))) {
		qs = append(qs, kindQuestion(p.EntityType))
	}
	for _, f := range p.Fields {
		if q, ok := fieldQuestion(f); ok && len(qs) < sample.MaxQuestions {
			qs = append(qs, q)
		}
	}
	return qs
}

// chosen is the option settled for question id: the answer, else the
// question's default.
func chosen(p sample.Params, id string) string {
	if a, ok := p.Answers[id]; ok && len(a.OptionIDs) > 0 {
		return a.OptionIDs[0]
	}
	for _, q := range sampleQuestions(sample.Params{EntityType: p.EntityType, Fields: p.Fields}) {
		if q.ID == id {
			return q.DefaultOptionID
		}
	}
	return ""
}

func samples(in TaskInput) any {
	p, ok := sample.ParseParams(in.Prompt)
	if !ok {
		return map[string]any{"sample": map[string]any{"name": "sample"}, "questions": []any{}}
	}
	// The misbehaving models, on purpose: flaky's first answer of a
	// conversation is an empty sample (its retry repairs it); broken always
	// answers an empty sample.
	if (in.Seed == "flaky" && !in.Retry) || in.Seed == "broken" {
		return map[string]any{"sample": map[string]any{}, "questions": []any{}}
	}
	kind := kindOf(p.EntityType)
	if slices.Contains(vagueTypes, strings.ToLower(strings.TrimSpace(p.EntityType))) {
		kind = chosen(p, "entity_kind")
	}
	conv := p.Convention
	if conv == sample.ConventionAuto {
		conv = sample.ConventionSnake
	}
	fields := p.FieldSet
	if len(fields) == 0 {
		src := p.Fields
		if len(src) == 0 {
			src = kindFields[kind]
			// Attached documents: their facts are the sample's fields.
			if keys := factKeys(in.Docs); len(keys) > 0 {
				src = keys
			}
		}
		for _, f := range src {
			if n := conv.Apply(f); !slices.Contains(fields, n) {
				fields = append(fields, n)
			}
		}
	}
	h := func(field string) uint64 {
		s := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s\x00%s", in.Seed, p.Index, p.Instance, field)))
		return binary.BigEndian.Uint64(s[:8])
	}
	name := p.Instance
	if name == "" || strings.HasSuffix(name, fmt.Sprintf("#%d", p.Index+1)) {
		// Distinct per index: the kind's names in turn from an offset that
		// depends on the call's seed and entity type only.
		names := kindNames[kind]
		off := sha256.Sum256([]byte(in.Seed + "\x00" + p.EntityType))
		i := (p.Index + int(off[0])) % len(names)
		name = names[i]
		if p.Index >= len(names) {
			name = fmt.Sprintf("%s %d", name, p.Index/len(names)+1)
		}
	}
	smp := map[string]any{}
	for _, f := range fields {
		if v, ok := fact(in.Docs, f); ok {
			smp[f] = factValue(v) // transcribed from the documents
			continue
		}
		smp[f] = sampleValue(p, kind, name, f, h(f))
	}
	out := map[string]any{"sample": smp}
	if p.AskQuestions {
		qs := sampleQuestions(p)
		if qs == nil {
			qs = []job.SampleQuestion{}
		}
		out["questions"] = qs
	}
	return out
}

// sampleValue is a plausible value of field for the instance, by the words
// of the field's name.
func sampleValue(p sample.Params, kind, name, field string, h uint64) any {
	w := strings.ToLower(sample.ConventionSnake.Apply(field))
	pick := func(xs []string) string { return xs[h%uint64(len(xs))] }
	has := func(parts ...string) bool {
		for _, part := range parts {
			if w == part || strings.HasPrefix(w, part+"_") || strings.HasSuffix(w, "_"+part) || strings.Contains(w, "_"+part+"_") {
				return true
			}
		}
		return false
	}
	switch {
	case w == "size":
		if chosen(p, "field_size") == "count" {
			return int(10 + h%490)
		}
		return fmt.Sprintf("%d x %d x %d cm", 10+h%50, 5+h%30, 2+h%20)
	case w == "value":
		if chosen(p, "field_value") == "rating" {
			return float64(10+h%41) / 10
		}
		return float64(1000+h%99000) / 100
	case has("email"):
		return slug(name) + "@example.com"
	case has("url", "website", "homepage", "site"):
		return "https://www." + slug(name) + ".example"
	case has("name", "title", "label"):
		return name
	case has("year", "founded"):
		return int(1950 + h%74)
	case has("date", "at", "birthday"):
		return fmt.Sprintf("%04d-%02d-%02d", 1990+h%34, 1+h%12, 1+h%28)
	case has("count", "employees", "headcount", "population", "number", "quantity", "pages"):
		return int(5 + h%50000)
	case has("price", "revenue", "amount", "cost", "salary", "budget"):
		return float64(500+h%500000) / 100
	case has("rating", "score"):
		return float64(10+h%41) / 10
	case has("is", "has", "active", "enabled", "available"):
		return h%2 == 0
	case has("industry", "sector"):
		return pick(industries)
	case has("city", "headquarters"):
		return pick(cities)
	case has("country", "nationality"):
		return pick(countries)
	case has("occupation", "job", "role", "profession"):
		return pick(jobs)
	case has("category", "type", "genre"):
		return pick(categories)
	case has("brand", "manufacturer", "maker"):
		return pick(brands)
	case has("description", "summary", "bio", "about"):
		return fmt.Sprintf("%s is a %s.", name, strings.TrimSpace(p.EntityType))
	case has("tags", "keywords"):
		return []any{pick(categories), pick(industries)}
	}
	return fmt.Sprintf("%s of %s", humanize(field), name)
}
