package llm

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"

	"github.com/entityenrich/enrich/domain/model"
)

//go:embed catalog.json
var embeddedCatalog []byte

// CatalogEntry is what the catalog knows of one model: its context size,
// its list prices and its capabilities.
type CatalogEntry struct {
	// Model is the model's name (gpt-4o), or a composite key
	// (openai::gpt-4o) to describe one provider's model only.
	Model         string `json:"model"`
	ContextLength int    `json:"context_length"`
	// Prices are USD per million tokens; absent means unknown.
	InputUSD  *float64 `json:"input_usd_per_mtok"`
	OutputUSD *float64 `json:"output_usd_per_mtok"`
	// SearchUSD is the web search tool's fee, USD per 1,000 searches;
	// absent means none.
	SearchUSD        *float64 `json:"search_usd_per_1k"`
	StructuredOutput bool     `json:"structured_output"`
	StrictSchema     bool     `json:"strict_schema"`
	// WebSearch says the provider offers a web search tool for the model.
	// It makes the model eligible for enable_web_search only where enrich
	// calls its provider type's tool (SearchTool; modelsel.CanSearch).
	WebSearch bool `json:"web_search"`
	PDF       bool `json:"pdf"`
	Vision    bool `json:"vision"`
	Audio     bool `json:"audio"`
	Video     bool `json:"video"`
	Reasoning bool `json:"reasoning"`
	ToolCalls bool `json:"tool_calls"`
	// Embedding marks an embedding model: input_usd_per_mtok is its
	// price, dims the length of its vectors.
	Embedding bool `json:"embedding"`
	Dims      int  `json:"dims"`
}

// Catalog maps a model name or a composite key to its entry.
type Catalog map[string]CatalogEntry

type catalogFile struct {
	Models []CatalogEntry `json:"models"`
}

// LoadCatalog returns the embedded catalog with the entries of each
// override applied over it (an entry replaces the one of the same name or
// key). An override is the catalog's JSON format ({"models": [...]}).
func LoadCatalog(overrides ...[]byte) (Catalog, error) {
	c := Catalog{}
	for i, raw := range append([][]byte{embeddedCatalog}, overrides...) {
		var f catalogFile
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("llm: model catalog %d: %w", i, err)
		}
		for j, e := range f.Models {
			if err := e.check(); err != nil {
				return nil, fmt.Errorf("llm: model catalog %d, entry %d: %w", i, j, err)
			}
			c[e.Model] = e
		}
	}
	return c, nil
}

func (e CatalogEntry) check() error {
	if e.Model == "" {
		return fmt.Errorf("model is required")
	}
	if e.Dims < 0 {
		return fmt.Errorf("%s: dims must not be negative", e.Model)
	}
	if e.ContextLength < 0 {
		return fmt.Errorf("%s: context_length must not be negative", e.Model)
	}
	for _, p := range []*float64{e.InputUSD, e.OutputUSD, e.SearchUSD} {
		if p != nil && (*p < 0 || math.IsNaN(*p) || math.IsInf(*p, 0)) {
			return fmt.Errorf("%s: prices must be 0 or more", e.Model)
		}
	}
	return nil
}

// lookup returns the entry of key: its composite key's first, else its
// model name's.
func (c Catalog) lookup(key model.Key) (CatalogEntry, bool) {
	if e, ok := c[key.String()]; ok {
		return e, true
	}
	e, ok := c[key.Model]
	return e, ok
}

// price is the entry's price in micro-credits per million tokens, and
// whether both halves are known.
func (e CatalogEntry) price() (model.Price, bool) {
	if e.InputUSD == nil || e.OutputUSD == nil {
		return model.Price{}, false
	}
	micro := func(usd float64) int64 { return int64(math.Round(usd * model.MicroCreditsPerUSD)) }
	p := model.Price{InputPerMTok: micro(*e.InputUSD), OutputPerMTok: micro(*e.OutputUSD)}
	if e.SearchUSD != nil {
		p.PerSearch = micro(*e.SearchUSD / 1000)
	}
	return p, true
}

// describe fills info's capabilities and context size from the entry.
func (e CatalogEntry) describe(info *model.Info) {
	info.ContextLength = e.ContextLength
	info.ResponseSchema = e.StructuredOutput
	info.StrictOutput = e.StrictSchema
	info.PDFInput = e.PDF
	info.Vision = e.Vision
	info.AudioInput = e.Audio
	info.VideoInput = e.Video
	info.Reasoning = e.Reasoning
	info.ToolCalls = e.ToolCalls
	info.WebSearch = e.WebSearch
}
