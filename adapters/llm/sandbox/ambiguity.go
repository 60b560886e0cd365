package sandbox

import (
	"sort"
	"strings"
	"unicode"

	"github.com/entityenrich/enrich/domain/ambiguity"
)

// reading is the sandbox's verdict on an obviously ambiguous name.
type reading struct {
	level           ambiguity.Level
	interpretations []string
	names           []string
	note            string
}

// ambiguousNames are the names the sandbox flags, wherever they appear:
// bare words that say neither what is measured nor in which unit, period
// or sense.
var ambiguousNames = map[string]reading{
	"size": {ambiguity.High, []string{"number of employees", "annual revenue", "physical size or area"},
		[]string{"employee_count", "annual_revenue_usd", "floor_area_m2"}, "Size of what? Name the measure and its unit."},
	"value": {ambiguity.High, []string{"monetary value in a currency", "a measured quantity", "a free-text value"},
		[]string{"market_value_usd", "measured_value"}, "A bare value has no unit or meaning; say what is valued and in which currency or unit."},
	"amount": {ambiguity.High, []string{"sum of money in a currency", "quantity of units"},
		[]string{"amount_usd", "quantity"}, "Money or a count? Name the currency or the unit."},
	"rate": {ambiguity.High, []string{"percentage per year", "price per unit", "frequency per period"},
		[]string{"annual_rate_percent", "unit_price_usd", "events_per_month"}, "A rate needs its unit and period."},
	"date": {ambiguity.High, []string{"date the entity was created or founded", "date of the last update", "date of an event"},
		[]string{"founded_date", "last_updated_date", "event_date"}, "Which date? Name the event it dates."},
	"status": {ambiguity.High, []string{"legal or registration status", "operational status", "workflow or review status"},
		[]string{"legal_status", "operating_status", "review_status"}, "Status in which sense? Name the lifecycle it belongs to."},
	"type": {ambiguity.High, []string{"legal form", "category or industry", "kind of record"},
		[]string{"legal_form", "category", "record_kind"}, "Type is the vaguest of names; say which classification it is."},
	"price": {ambiguity.Medium, []string{"list price", "price paid", "price per unit"},
		[]string{"list_price_usd", "unit_price_usd"}, "Which price, in which currency?"},
	"score": {ambiguity.Medium, []string{"a rating on a fixed scale", "a rank among peers"},
		[]string{"rating_out_of_5", "peer_rank"}, "A score needs its scale and its direction."},
	"level": {ambiguity.Medium, []string{"seniority level", "tier or grade", "a measured level"},
		[]string{"seniority_level", "tier"}, "Level of what, on which scale?"},
	"count": {ambiguity.Medium, []string{"number of items now", "number of items ever"},
		[]string{"current_count", "total_count"}, "Count of what, and as of when?"},
	"number": {ambiguity.Medium, []string{"an identifier (registration or phone number)", "a count"},
		[]string{"registration_number", "phone_number"}, "An identifier or a quantity?"},
	"total": {ambiguity.Medium, []string{"total revenue", "total count of items"},
		[]string{"total_revenue_usd", "total_items"}, "Total of what, over which period?"},
	"time": {ambiguity.Medium, []string{"a time of day", "a duration", "a timestamp"},
		[]string{"time_of_day", "duration_minutes", "timestamp"}, "A moment or a length of time?"},
	"duration": {ambiguity.Medium, []string{"duration in days", "duration in hours"},
		[]string{"duration_days", "duration_hours"}, "A duration needs its unit."},
	"length": {ambiguity.Medium, []string{"physical length", "length of time", "length of a text"},
		[]string{"length_m", "duration_days", "character_count"}, "Length of what, in which unit?"},
	"weight": {ambiguity.Medium, []string{"mass in kilograms", "relative importance"},
		[]string{"weight_kg", "importance_weight"}, "A mass or an importance?"},
	"range": {ambiguity.Medium, []string{"a span between two values", "a product line"},
		[]string{"value_range", "product_range"}, "A span or an assortment?"},
	"category": {ambiguity.Medium, []string{"industry sector", "product category", "size class"},
		[]string{"industry_sector", "product_category"}, "Which classification scheme?"},
}

// pairNames are field names that describe a pairing (the link between a
// parent and a related entity), not the related entity itself.
var pairNames = map[string]bool{
	"role": true, "title": true, "position": true, "since": true, "until": true, "start_date": true, "end_date": true,
	"joined": true, "joined_at": true, "left_at": true, "share": true, "stake": true, "ownership": true,
	"ownership_percent": true, "percentage": true, "quantity": true, "rank": true, "order": true, "is_primary": true,
	"relationship": true, "tenure": true, "appointed": true, "appointed_at": true,
}

// ambiguityAnswer answers ports.TaskAmbiguity: a finding for every property
// whose name is in ambiguousNames, and an identity-scoping finding for
// every relationship site whose fields mix pair fields with others. The
// flaky model's first answer, and every answer of the broken one, lack
// required fields.
func ambiguityAnswer(in TaskInput) any {
	if (in.Seed == "flaky" && !in.Retry) || in.Seed == "broken" {
		return map[string]any{"findings": []any{map[string]any{"path": "?"}}, "identity_scoping": []any{}}
	}
	subject, _ := ambiguity.ParseSubject(in.Prompt)
	describe := asksDescription(in.Schema)
	findings := []any{}
	for _, s := range subject.Sites {
		r, ok := ambiguousNames[strings.ToLower(s.Name)]
		if !ok {
			continue
		}
		f := map[string]any{"path": s.Path, "kind": string(ambiguity.Ambiguous), "level": string(r.level),
			"interpretations": r.interpretations, "note": r.note, "suggested_names": r.names}
		if describe {
			f["suggested_description"] = capitalize(r.interpretations[0]) + " of the " + s.Parent + "."
		}
		findings = append(findings, f)
	}
	scoping := []any{}
	for _, rel := range subject.Relations {
		var ent, pair []string
		for _, f := range rel.Fields {
			if pairNames[strings.ToLower(f)] {
				pair = append(pair, f)
			} else {
				ent = append(ent, f)
			}
		}
		if len(ent) == 0 || len(pair) == 0 {
			continue
		}
		sort.Strings(ent)
		sort.Strings(pair)
		segs := strings.Split(rel.Path, ".")
		scoping = append(scoping, map[string]any{"path": rel.Path, "entity_fields": ent, "pair_fields": pair,
			"suggested_entity_name": entityName(segs[len(segs)-1]),
			"note":                  "The items mix facts about the related entity with facts about its link to the parent."})
	}
	return map[string]any{"findings": findings, "identity_scoping": scoping}
}

// asksDescription reports whether the answer schema asks each finding for
// a suggested_description.
func asksDescription(schema map[string]any) bool {
	props, _ := schema["properties"].(map[string]any)
	findings, _ := props["findings"].(map[string]any)
	items, _ := findings["items"].(map[string]any)
	fp, _ := items["properties"].(map[string]any)
	_, ok := fp["suggested_description"]
	return ok
}

// entityName is a site's name made an entity type: "board_members" ->
// "BoardMember".
func entityName(site string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(site, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }) {
		b.WriteString(capitalize(part))
	}
	n := b.String()
	switch {
	case strings.HasSuffix(n, "ies"):
		n = strings.TrimSuffix(n, "ies") + "y"
	case strings.HasSuffix(n, "ss"):
	case strings.HasSuffix(n, "s"):
		n = strings.TrimSuffix(n, "s")
	}
	if n == "" {
		return "Entity"
	}
	return n
}

func capitalize(s string) string {
	r := []rune(s)
	if len(r) == 0 {
		return s
	}
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
