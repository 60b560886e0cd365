package sandbox

import (
	"errors"
	"hash/fnv"
	"strconv"
)

// SearchModel is the sandbox model that can search the web: sandbox::search.
// Asked to search (MetadataWebSearch), it answers as echo does with its own
// seed, and reports what a provider's search tool reports: the searches it
// made (billed per search) and the pages its answer cites. It touches no
// network: the pages are on the reserved .example domain and nothing is
// fetched.
const SearchModel = "search"

// SearchesPerCall is how many web searches sandbox::search reports for each
// call that asks for them.
const SearchesPerCall = 1

// Keys of the generation info of a call that searched.
const (
	// InfoWebSearchCalls is the number of searches (an int), as
	// OpenAI's web_search_call items and Anthropic's
	// usage.server_tool_use.web_search_requests count them.
	InfoWebSearchCalls = "WebSearchCalls"
	// InfoCitations are the pages the answer cites ([]Citation), in the
	// shape of OpenAI's url_citation annotations.
	InfoCitations = "Citations"
)

// ErrCannotSearch is a call that asks a sandbox model without web search to
// search.
var ErrCannotSearch = errors.New("the sandbox model cannot search the web: use sandbox::search")

// Citation is a page a grounded answer cites.
type Citation struct {
	Type  string `json:"type"` // url_citation
	URL   string `json:"url"`
	Title string `json:"title"`
}

// Searches returns the web searches that a sandbox answer's generation
// info reports: 0 when it did not search.
func Searches(info map[string]any) int {
	n, _ := info[InfoWebSearchCalls].(int)
	return n
}

// grounded adds to info what a search reports: the searches and the pages
// found about the entity (named by its name, or by the prompt when it has
// none), the same for the same entity.
func grounded(info, entity map[string]any, prompt string) {
	name := nameOf(entity)
	if name == "" {
		h := fnv.New64a()
		_, _ = h.Write([]byte(prompt))
		name = "entity " + strconv.FormatUint(h.Sum64()%10_000, 10)
	}
	s := slug(name)
	info[InfoWebSearchCalls] = SearchesPerCall
	info[InfoCitations] = []Citation{
		{Type: "url_citation", URL: "https://" + s + ".example/", Title: name + ": official site"},
		{Type: "url_citation", URL: "https://encyclopedia.example/wiki/" + s, Title: name + " - Encyclopedia"},
	}
}

// nameOf is the entity's name, the first of the usual attributes that
// holds a string.
func nameOf(entity map[string]any) string {
	for _, k := range []string{"name", "title", "company", "company_name", "label"} {
		if v, ok := entity[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}
