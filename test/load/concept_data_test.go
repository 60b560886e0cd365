package load_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// The vocabulary of the concept bench: company-like names (prefix, trade,
// sometimes a place, legal form), their built-in n-gram embeddings, and
// probe texts that are perturbed copies of some of them.

var (
	namePrefixes = strings.Fields(`Northwind Blue Silver Granite Pacific Summit Evergreen Crescent Vertex Harbor Apex Cedar
		Golden Iron Maple Nova Orion Pioneer Quantum Redwood Sterling Titan Unity Vanguard Willow Zenith Atlas Beacon Cobalt
		Delta Echo Falcon Horizon Keystone Lumen Meridian Nimbus Oakridge Prairie Riverside Sapphire Trident Upland Vista
		Westbrook Yellowstone Alder Birch Coral Dune Ember Fjord Glacier Hollow Indigo Juniper Kestrel Lark Mesa Nordic`)
	nameTrades = strings.Fields(`Analytics Logistics Dynamics Systems Foods Energy Capital Health Robotics Software Textiles
		Pharma Motors Media Labs Networks Solar Brewing Mining Aerospace Biotech Chemicals Consulting Designs Electronics Farms
		Freight Games Insurance Instruments Lighting Machinery Marine Metals Optics Packaging Paper Plastics Realty Retail
		Security Semiconductors Shipping Steel Telecom Tools Travel Ventures Water Wireless Apparel Bakery Cosmetics Dental
		Education Fitness Furniture Hotels Imaging Jewelry Kitchens Learning Materials Nutrition Outdoors Pets Printing
		Publishing Recycling Storage`)
	namePlaces = strings.Fields(`Ohio Texas Bavaria Lyon Ontario Bristol Kyoto Lisbon Oslo Denver Quebec Flanders Milan
		Galway Perth Utah Nevada Alsace Porto Seville`)
	nameForms = strings.Fields(`Inc Ltd GmbH Group Holdings Partners Co Corporation International Industries Solutions
		Technologies Services Enterprises Worldwide AG SA BV LLC PLC Associates Collective Works Company Limited`)
	// probeSuffixes are what a source adds to a name it spells its own way.
	probeSuffixes = []string{" Inc.", ", LLC", " GmbH", " Group", " & Co.", " (Europe)", " Ltd."}
)

// conceptNames returns n distinct company-like names (distinct once
// normalized), the same for the same seed.
func conceptNames(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := make(map[string]bool, n)
	names := make([]string, 0, n)
	for len(names) < n {
		parts := []string{namePrefixes[r.IntN(len(namePrefixes))], nameTrades[r.IntN(len(nameTrades))]}
		if r.IntN(3) == 0 {
			parts = append(parts, "of", namePlaces[r.IntN(len(namePlaces))])
		}
		parts = append(parts, nameForms[r.IntN(len(nameForms))])
		name := strings.Join(parts, " ")
		if k := concept.Normalize(name); !seen[k] {
			seen[k] = true
			names = append(names, name)
		}
	}
	return names
}

// probeTexts returns count perturbed copies of names: a typo, a legal
// form added or a word dropped, the way another source spells a company.
func probeTexts(names []string, count int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]string, count)
	for i := range out {
		words := strings.Fields(names[r.IntN(len(names))])
		switch i % 4 {
		case 0: // a typo: two letters of a word swapped
			at := r.IntN(len(words))
			if w := []rune(words[at]); len(w) > 3 {
				j := 1 + r.IntN(len(w)-2)
				w[j], w[j+1] = w[j+1], w[j]
				words[at] = string(w)
			}
		case 1: // the legal form replaced by another spelling
			words = append(words[:len(words)-1], strings.TrimSpace(probeSuffixes[r.IntN(len(probeSuffixes))]))
		case 2: // the legal form dropped, a letter dropped
			words = words[:len(words)-1]
			w := words[0]
			k := r.IntN(len(w))
			words[0] = w[:k] + w[k+1:]
		default: // a suffix added
			words[len(words)-1] += probeSuffixes[r.IntN(len(probeSuffixes))]
		}
		out[i] = strings.Join(words, " ")
	}
	return out
}

// embedAll embeds names with the built-in embedder, in parallel, the way
// the service embeds a text: its normalized form.
func embedAll(names []string) [][]float32 {
	vecs := make([][]float32, len(names))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(names); i += workers {
				vecs[i] = concept.NgramEmbed(concept.Normalize(names[i]), concept.NgramDims)
			}
		}()
	}
	wg.Wait()
	return vecs
}

// vocab is what every store is seeded with.
type vocab struct {
	typ, model string
	ids, names []string
	vecs       [][]float32
	created    time.Time
}

func (v *vocab) slice() concept.Slice { return concept.Slice{Type: v.typ, EmbeddingModel: v.model} }

// seedMemory seeds the first n concepts into org on s (the memory
// server's store) through its CreateConcept.
func seedMemory(t *testing.T, s ports.ConceptStore, v *vocab, org string, n int) {
	ctx := context.Background()
	for i := range n {
		_, err := s.CreateConcept(ctx, ports.NewConcept{ID: v.ids[i], OrgID: org, Type: v.typ, AliasID: "a" + v.ids[i],
			Text: v.names[i], Origin: concept.OriginImport, EmbeddingModel: v.model, Vector: v.vecs[i], CreatedAt: v.created})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func vectorLiteral(b *strings.Builder, vec []float32) {
	b.WriteByte('{')
	for j, x := range vec {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	b.WriteByte('}')
}

func quoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// seedRows are the three tables' rows of concepts [from, to), as the
// store's CreateConcept writes them.
func seedRows(v *vocab, org string, from, to int) (concepts, aliases, vectors [][]any) {
	for i := from; i < to; i++ {
		norm := concept.Normalize(v.names[i])
		concepts = append(concepts, []any{v.ids[i], org, v.typ, v.names[i], norm, 0, v.model, len(v.vecs[i]), v.created})
		aliases = append(aliases, []any{"a" + v.ids[i], org, v.ids[i], v.typ, v.names[i], norm, true, 0,
			string(concept.OriginImport), v.created})
		vectors = append(vectors, []any{org, v.typ, v.model, v.ids[i], len(v.vecs[i]), v.vecs[i]})
	}
	return concepts, aliases, vectors
}

var seedColumns = [][]string{
	{"id", "org_id", "concept_type", "canonical_text", "normalized_text", "ref_count", "embedding_model", "dims", "created_at"},
	{"id", "org_id", "concept_id", "concept_type", "text", "normalized_text", "is_canonical", "ref_count", "origin", "created_at"},
	{"org_id", "concept_type", "embedding_model", "concept_id", "dims", "vector"},
}

var seedTables = []string{"semantic_concepts", "concept_aliases", "concept_embeddings"}

// seedCopy writes concepts [from, to) with COPY (native PostgreSQL).
func seedCopy(ctx context.Context, db *postgres.DB, v *vocab, org string, from, to int) error {
	c, a, e := seedRows(v, org, from, to)
	for i, rows := range [][][]any{c, a, e} {
		if _, err := db.Pool.CopyFrom(ctx, pgx.Identifier{seedTables[i]}, seedColumns[i], pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("copy %s: %w", seedTables[i], err)
		}
	}
	return nil
}

// seedInsert writes concepts [from, to) with one multi-row INSERT per
// table, values written into the statement: PGlite's simple protocol
// would interpolate them anyway.
func seedInsert(ctx context.Context, db *postgres.DB, v *vocab, org string, from, to int) error {
	c, a, e := seedRows(v, org, from, to)
	for i, rows := range [][][]any{c, a, e} {
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", seedTables[i], strings.Join(seedColumns[i], ", "))
		for r, row := range rows {
			if r > 0 {
				b.WriteString(",\n")
			}
			b.WriteByte('(')
			for j, x := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				switch x := x.(type) {
				case string:
					b.WriteString(quoted(x))
				case int:
					b.WriteString(strconv.Itoa(x))
				case bool:
					b.WriteString(strconv.FormatBool(x))
				case time.Time:
					b.WriteString(quoted(x.UTC().Format(time.RFC3339Nano)))
				case []float32:
					b.WriteString("'")
					vectorLiteral(&b, x)
					b.WriteString("'::real[]")
				}
			}
			b.WriteByte(')')
		}
		if _, err := db.Pool.Exec(ctx, b.String()); err != nil {
			return fmt.Errorf("insert %s: %w", seedTables[i], err)
		}
	}
	return nil
}

// seedPG seeds the first want concepts into org in batches, and stops early once
// budget has passed; it returns how many it wrote and how long it took.
func seedPG(ctx context.Context, t *testing.T, db *postgres.DB, v *vocab, org string, want int, useCopy bool, budget time.Duration) (int, time.Duration) {
	const batch = 500
	start := time.Now()
	n := 0
	for n < want {
		to := min(n+batch, want)
		var err error
		if useCopy {
			err = seedCopy(ctx, db, v, org, n, to)
		} else {
			err = seedInsert(ctx, db, v, org, n, to)
		}
		if err != nil {
			t.Fatalf("seed concepts %d-%d: %v", n, to, err)
		}
		n = to
		if n%10000 == 0 {
			t.Logf("seeded %d concepts in %s", n, time.Since(start).Round(time.Second))
		}
		if time.Since(start) > budget {
			break
		}
	}
	return n, time.Since(start)
}
