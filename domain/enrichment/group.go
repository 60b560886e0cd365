package enrichment

import (
	"fmt"
	"sort"
	"strings"
)

// DefaultMaxDomains is how many expertise domains one model's run of a
// multi_expertise job calls at most, unless configured otherwise
// (ENRICH_MAX_EXPERTISE_DOMAINS). Schemas of the reference product name
// from 1 to about 10 domains; 16 leaves room for those and bounds a schema
// of 2,000 object properties (2,000 domains, one call each) to 16 calls.
const DefaultMaxDomains = 16

// Group joins domains (as Plan returns them) into at most max domains, so
// that a schema with more expertise domains than max makes max calls per
// model, not one per domain. Below the cap (or with max <= 0) the domains
// are returned as they are.
//
// The rule is pure and deterministic, so that a resumed job plans the same
// groups again: a domain is never split (its properties stay together),
// the domains keep Plan's order (general first, then by key, so that
// domains whose keys share a prefix land side by side), and the order is
// cut into max contiguous runs of about the same number of properties.
// A group of one domain is that domain unchanged; a group of several is
// keyed by its first and last domain ("a..z"), named after its members,
// and asks for the union of their properties.
func Group(doc map[string]any, domains []Domain, max int) []Domain {
	if max <= 0 || len(domains) <= max {
		return domains
	}
	total := 0
	for _, d := range domains {
		total += len(d.Properties)
	}
	out := make([]Domain, 0, max)
	i := 0
	for g := 0; g < max; g++ {
		groupsLeft := max - g
		// The run's share of what is left, rounded up; every later
		// group keeps at least one domain.
		target := (total + groupsLeft - 1) / groupsLeft
		j, size := i, 0
		for j < len(domains) && (j == i || size+len(domains[j].Properties) <= target) && len(domains)-j > groupsLeft-1 {
			size += len(domains[j].Properties)
			j++
		}
		out = append(out, merged(doc, domains[i:j]))
		total -= size
		i = j
	}
	return out
}

// merged is one group of domains as one domain.
func merged(doc map[string]any, ds []Domain) Domain {
	if len(ds) == 1 {
		return ds[0]
	}
	var props, names, descs []string
	for _, d := range ds {
		props = append(props, d.Properties...)
		names = append(names, d.Name)
		if d.Description != "" {
			descs = append(descs, d.Name+": "+d.Description)
		}
	}
	sort.Strings(props)
	const shown = 5
	name := strings.Join(names, ", ")
	if len(names) > shown {
		name = fmt.Sprintf("%s and %d more", strings.Join(names[:shown-1], ", "), len(names)-shown+1)
	}
	if len(descs) > shown {
		descs = descs[:shown]
	}
	return Domain{Key: ds[0].Key + ".." + ds[len(ds)-1].Key, Name: name, Description: strings.Join(descs, "; "),
		Properties: props, Schema: SubSchema(doc, props)}
}
