package ambiguity

import (
	"encoding/json"
	"sort"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// Keywords the saved-schema check writes into a schema document.
const (
	// AmbiguityKey holds a property's verdict (the reference's
	// AmbiguityInfo, with suggested_description).
	AmbiguityKey = "ambiguity"
	// ScopingKey holds a relationship site's verdict (IdentityScopingInfo).
	ScopingKey = "identity_scoping"
	// CheckKey, at the document's top, records what the last check saw:
	// {"content_hash", "model", "checked_at"}. A document whose hash
	// (without the verdicts) is unchanged is up to date.
	CheckKey = "x-ambiguityCheck"
)

// Info is the verdict written on a property.
type Info struct {
	Kind                 Kind     `json:"kind"`
	Level                Level    `json:"level"`
	Interpretations      []string `json:"interpretations"`
	Note                 string   `json:"note"`
	SuggestedDescription string   `json:"suggested_description"`
	SuggestedNames       []string `json:"suggested_names,omitempty"`
}

// Check is what CheckKey holds.
type Check struct {
	ContentHash string `json:"content_hash"`
	Model       string `json:"model"`
	CheckedAt   string `json:"checked_at"`
}

// Annotate returns a copy of the schema document with the report's
// verdicts written on the properties they name (ambiguity, with a
// suggested description: the finding's, else its first reading) and on the
// relationship sites (identity_scoping); verdicts of an earlier check on
// properties no longer flagged are removed, and check is recorded under
// CheckKey. A property inside a $defs definition is annotated there, which
// every use of the definition shares. The report's findings get their
// suggested descriptions filled in.
func Annotate(doc map[string]any, rep *Report, check Check) map[string]any {
	out := Strip(doc)
	sites := propertySites(out)
	for i := range rep.Findings {
		f := &rep.Findings[i]
		f.SuggestedDescription = describe(*f)
		p := sites[f.Path]
		if p == nil {
			continue
		}
		p[AmbiguityKey] = Info{Kind: f.Kind, Level: f.Level, Interpretations: f.Interpretations, Note: f.Note,
			SuggestedDescription: f.SuggestedDescription, SuggestedNames: f.SuggestedNames}
	}
	for _, sf := range rep.IdentityScoping {
		if p := sites[sf.Path]; p != nil {
			p[ScopingKey] = sf
		}
	}
	out[CheckKey] = check
	return roundTrip(out)
}

// Strip returns a deep copy of the document without any verdict of the
// check: what its content hash is taken over.
func Strip(doc map[string]any) map[string]any {
	out := roundTrip(doc)
	if out == nil {
		out = map[string]any{}
	}
	delete(out, CheckKey)
	for _, p := range propertySites(out) {
		delete(p, AmbiguityKey)
		delete(p, ScopingKey)
	}
	return out
}

// LastCheck returns what the document's last check recorded.
func LastCheck(doc map[string]any) (Check, bool) {
	var c Check
	raw, ok := doc[CheckKey]
	if !ok {
		return c, false
	}
	b, _ := json.Marshal(raw)
	return c, json.Unmarshal(b, &c) == nil && c.ContentHash != ""
}

// ReadBack rebuilds the report of the check written in doc (for an
// up-to-date document, which is not checked again).
func ReadBack(doc map[string]any) Report {
	subject := FromSchema(doc)
	sites := propertySites(doc)
	rep := Report{AnalyzedCount: len(subject.Sites), Findings: []Finding{}, IdentityScoping: []ScopingFinding{},
		Summary: map[string]int{string(Low): 0, string(Medium): 0, string(High): 0}}
	seen := map[string]bool{}
	for _, s := range subject.Sites {
		p := sites[s.Path]
		if p == nil {
			continue
		}
		if raw, ok := p[AmbiguityKey]; ok && !seen[s.Path] {
			var in Info
			b, _ := json.Marshal(raw)
			if json.Unmarshal(b, &in) == nil && in.Level != "" {
				seen[s.Path] = true
				rep.Summary[string(in.Level)]++
				names := in.SuggestedNames
				if names == nil {
					names = []string{}
				}
				rep.Findings = append(rep.Findings, Finding{Path: s.Path, Kind: in.Kind, Level: in.Level, Interpretations: in.Interpretations,
					Note: in.Note, SuggestedNames: names, SuggestedDescription: in.SuggestedDescription})
			}
		}
		if raw, ok := p[ScopingKey]; ok {
			var sf ScopingFinding
			b, _ := json.Marshal(raw)
			if json.Unmarshal(b, &sf) == nil {
				sf.Path = s.Path
				rep.IdentityScoping = append(rep.IdentityScoping, sf)
			}
		}
	}
	return rep
}

// propertySites maps each property path (as FromSchema names them) to the
// property's own map in doc, which may be changed in place.
func propertySites(doc map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	var walk func(obj map[string]any, prefix string, depth int)
	walk = func(obj map[string]any, prefix string, depth int) {
		if depth > maxDepth || len(out) >= MaxSites {
			return
		}
		props, _ := jsondoc.Deref(doc, obj)["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			p, _ := props[name].(map[string]any)
			if p == nil {
				continue
			}
			path := join(prefix, name)
			// A property that is a $ref carries its verdict beside the $ref.
			out[path] = p
			if obj := objectOf(doc, p); obj != nil {
				walk(obj, path, depth+1)
			}
		}
	}
	walk(rootOf(doc), "", 0)
	return out
}

func roundTrip(v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}
