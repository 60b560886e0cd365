// Package modelsel resolves the literal "auto" to one model: the organization's
// pinned default, else the best benchmarked model, else the first configured
// real model; sandbox models only when nothing real is configured.
package modelsel

import (
	"errors"
	"fmt"
	"sort"

	"github.com/entityenrich/enrich/domain/model"
)

// ErrNoCapableModel is SPEC.md's no_capable_default_model.
var ErrNoCapableModel = errors.New("no model satisfies the request's constraints")

// Needs are the capabilities a request requires of the model.
type Needs struct {
	WebSearch bool
	Vision    bool
	PDFInput  bool
	Audio     bool
}

// Pick is the outcome of automatic selection.
type Pick struct {
	Model  model.Info
	Pinned bool
	// Source says where the pick came from: pinned, benchmark, configured or sandbox.
	Source string
}

// CanSearch is the one rule of enable_web_search's eligibility: the
// catalog says the provider offers web search for the model, and enrich
// calls its provider type's search tool (a sandbox model that declares
// both, sandbox::search, answers offline as if it had searched). Explicit
// models, automatic selection and the options' previews all ask it. A
// sandbox model that can search is still a sandbox model: Select never
// picks it while a real model is configured.
func CanSearch(m model.Info) bool {
	return m.WebSearch && m.WebSearchTool
}

func capable(m model.Info, n Needs) bool {
	return (!n.WebSearch || CanSearch(m)) && (!n.Vision || m.Vision) && (!n.PDFInput || m.PDFInput) && (!n.Audio || m.AudioInput)
}

// Select picks one model among candidates. pinned, if non-empty, wins when it
// is capable. Real models come before sandbox ones; ties go to the key order.
func Select(candidates []model.Info, pinned string, n Needs) (Pick, error) {
	var real, sandbox []model.Info
	for _, m := range candidates {
		if !capable(m, n) {
			continue
		}
		if pinned != "" && m.Key.String() == pinned {
			return Pick{Model: m, Pinned: true, Source: "pinned"}, nil
		}
		if m.Sandbox {
			sandbox = append(sandbox, m)
		} else {
			real = append(real, m)
		}
	}
	byKey := func(ms []model.Info) {
		sort.Slice(ms, func(i, j int) bool { return ms[i].Key.String() < ms[j].Key.String() })
	}
	if len(real) > 0 {
		byKey(real)
		return Pick{Model: real[0], Source: "configured"}, nil
	}
	// The sandbox is never picked while a real model exists, even one that
	// lacks the capability: then the request fails instead of silently
	// degrading to fake output.
	for _, m := range candidates {
		if !m.Sandbox {
			return Pick{}, ErrNoCapableModel
		}
	}
	if len(sandbox) > 0 {
		byKey(sandbox)
		for _, m := range sandbox {
			if m.Key.Model == "echo" {
				return Pick{Model: m, Source: "sandbox"}, nil
			}
		}
		return Pick{Model: sandbox[0], Source: "sandbox"}, nil
	}
	return Pick{}, ErrNoCapableModel
}

// Available keeps the models that can be called now: sandbox models, and
// models whose provider has a usable key for the caller (or needs none).
// Automatic selection chooses among them, and the options show the others
// with is_available false.
func Available(models []model.Info, usable func(provider string) bool) []model.Info {
	out := make([]model.Info, 0, len(models))
	for _, m := range models {
		if m.Sandbox || usable(m.Key.Provider) {
			out = append(out, m)
		}
	}
	return out
}

// SelectAvailable is Select among the Available models. While a real model
// is configured the sandbox is never the answer unless pinned, even when no
// real model has a usable key: auto then fails instead of answering with
// fake output.
func SelectAvailable(models []model.Info, usable func(provider string) bool, pinned string, n Needs) (Pick, error) {
	p, err := Select(Available(models, usable), pinned, n)
	if err != nil || !p.Model.Sandbox || p.Pinned {
		return p, err // a sandbox model the organization pinned is its choice
	}
	for _, m := range models {
		if !m.Sandbox {
			return Pick{}, ErrNoCapableModel
		}
	}
	return p, nil
}

// SelectOwn is SelectAvailable for an organization that may pin one of its
// own providers' models (own, which it can always call): pinned and
// capable, that model is the answer. Otherwise the catalog's models are
// chosen among as always: an organization's own model has no rank, so it
// is never chosen unpinned.
func SelectOwn(catalog, own []model.Info, usable func(provider string) bool, pinned string, n Needs) (Pick, error) {
	for _, m := range own {
		if pinned != "" && m.Key.String() == pinned && capable(m, n) {
			return Pick{Model: m, Pinned: true, Source: "pinned"}, nil
		}
	}
	return SelectAvailable(catalog, usable, pinned, n)
}

// The tasks automatic selection serves; an organization may pin a default
// model for each.
const (
	TaskEnrichment       = "enrichment"
	TaskSchemaGeneration = "schema_generation"
	TaskSampleGeneration = "sample_generation"
)

// Tasks lists the tasks of automatic selection.
func Tasks() []string { return []string{TaskEnrichment, TaskSchemaGeneration, TaskSampleGeneration} }

// ErrUnknownTask is returned for a task automatic selection does not serve.
var ErrUnknownTask = errors.New("unknown task")

// CheckTask returns ErrUnknownTask (wrapped, naming the tasks) for a task
// that is not one of Tasks.
func CheckTask(t string) error {
	for _, k := range Tasks() {
		if k == t {
			return nil
		}
	}
	return fmt.Errorf("%w %q: use %v", ErrUnknownTask, t, Tasks())
}

// CheckDefaults checks pinned defaults: known tasks, composite keys of models
// among known (the catalog, and the organization's own providers' models).
// It returns the first offending task.
func CheckDefaults(defaults map[string]string, known []model.Info) (task string, err error) {
	names := make(map[string]bool, len(known))
	for _, m := range known {
		names[m.Key.String()] = true
	}
	for t, key := range defaults {
		if err := CheckTask(t); err != nil {
			return t, err
		}
		if !names[key] {
			return t, fmt.Errorf("%s: unknown model %q", t, key)
		}
	}
	return "", nil
}
