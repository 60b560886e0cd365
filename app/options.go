package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/ports"
)

// Languages are the ISO 639-1 codes enrichment accepts, with their names.
var Languages = map[string]string{
	"ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "cs": "Czech", "da": "Danish", "de": "German",
	"el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian", "fi": "Finnish",
	"fr": "French", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian",
	"it": "Italian", "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay",
	"nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian",
	"sk": "Slovak", "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "th": "Thai",
	"tr": "Turkish", "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}

// Options is what enrichment offers (GET /api/enrichment/options).
type Options struct {
	Models []model.Info
	// Available says, by composite key, whether the caller's organization
	// can call the model now (a usable key exists, or none is needed).
	Available  map[string]bool
	Languages  map[string]string
	Strategies []enrichment.Strategy
	// Defaults and DefaultsWebSearch are what auto resolves to, by task
	// type (only "enrichment" today); a task is absent when nothing
	// resolves.
	Defaults, DefaultsWebSearch map[string]modelsel.Pick
}

// TaskEnrichment is the task type of enrichment's automatic selection.
const TaskEnrichment = modelsel.TaskEnrichment

// Options lists models (with whether the organization can use each),
// languages, strategies and what auto currently resolves to for it.
func (s *EnrichmentService) Options(ctx context.Context, p *access.Principal) (Options, error) {
	if err := access.Authorize(p, access.ActEnrichmentOptions); err != nil {
		return Options{}, err
	}
	usable, err := s.usable(ctx, p.OrgID)
	if err != nil {
		return Options{}, err
	}
	pinned, err := s.pinned(ctx, p.OrgID)
	if err != nil {
		return Options{}, err
	}
	ms := s.Catalog.Models()
	o := Options{Models: ms, Available: map[string]bool{}, Languages: Languages, Strategies: enrichment.Strategies(),
		Defaults: map[string]modelsel.Pick{}, DefaultsWebSearch: map[string]modelsel.Pick{}}
	for _, m := range modelsel.Available(ms, usable) {
		o.Available[m.Key.String()] = true
	}
	for _, task := range modelsel.Tasks() {
		if p, err := modelsel.SelectAvailable(ms, usable, pinned[task], modelsel.Needs{}); err == nil {
			o.Defaults[task] = p
		}
		if task == modelsel.TaskSchemaGeneration {
			continue // the reference previews web search for enrichment and samples only
		}
		if p, err := modelsel.SelectAvailable(ms, usable, pinned[task], modelsel.Needs{WebSearch: true}); err == nil {
			o.DefaultsWebSearch[task] = p
		}
	}
	return o, nil
}

// pinned returns the organization's pinned default models by task.
func (s *EnrichmentService) pinned(ctx context.Context, orgID string) (map[string]string, error) {
	if s.Orgs == nil {
		return nil, nil
	}
	o, err := s.Orgs.GetOrg(ctx, orgID)
	if err != nil {
		return nil, err
	}
	return o.ModelDefaults, nil
}

// AutoPick resolves auto for one task: the organization's pinned default
// while it can be called, else the best available model (see
// modelsel.SelectAvailable). No eligible model is a 400
// no_capable_default_model whose detail says "auto-select" (the
// reference's clients look for it).
func (s *EnrichmentService) AutoPick(ctx context.Context, orgID, task string, n modelsel.Needs) (modelsel.Pick, error) {
	usable, err := s.usable(ctx, orgID)
	if err != nil {
		return modelsel.Pick{}, err
	}
	pinned, err := s.pinned(ctx, orgID)
	if err != nil {
		return modelsel.Pick{}, err
	}
	p, err := modelsel.SelectAvailable(s.Catalog.Models(), usable, pinned[task], n)
	if err != nil {
		return modelsel.Pick{}, coded(ports.ErrInvalid, "no_capable_default_model",
			"auto-select found no %s model with a usable provider key that satisfies the request (web search: %v)", task, n.WebSearch)
	}
	return p, nil
}

// ModelDefaults returns the organization's pinned default models by task.
func (s *EnrichmentService) ModelDefaults(ctx context.Context, p *access.Principal) (map[string]string, error) {
	if err := access.Authorize(p, access.ActGetModelDefaults); err != nil {
		return nil, err
	}
	d, err := s.pinned(ctx, p.OrgID)
	if d == nil {
		d = map[string]string{}
	}
	return d, err
}

// SetModelDefaults pins (a composite key) or unpins (nil) the default model
// of the tasks named in change; other tasks keep theirs. A model must be in
// the catalog; whether the organization can call it is decided at each
// use, so a pinned model without a usable key is passed over, not refused
// here.
func (s *EnrichmentService) SetModelDefaults(ctx context.Context, p *access.Principal, change map[string]*string) (map[string]string, error) {
	if err := access.Authorize(p, access.ActSetModelDefaults); err != nil {
		return nil, err
	}
	set := map[string]string{}
	for task, key := range change {
		if err := checkText(task, task); err != nil {
			return nil, err
		}
		if key != nil {
			if err := checkText(task, *key); err != nil {
				return nil, err
			}
			set[task] = *key
		} else {
			set[task] = ""
		}
	}
	check := map[string]string{}
	for task, key := range set {
		if err := modelsel.CheckTask(task); err != nil {
			return nil, Invalid(task, "%v", err)
		}
		if key != "" {
			check[task] = key
		}
	}
	if task, err := modelsel.CheckDefaults(check, s.Catalog.Models()); err != nil {
		return nil, Invalid(task, "%v", err)
	}
	o, err := s.Orgs.UpdateOrg(ctx, p.OrgID, func(o *access.Organization) error {
		if o.ModelDefaults == nil {
			o.ModelDefaults = map[string]string{}
		}
		for task, key := range set {
			if key == "" {
				delete(o.ModelDefaults, task)
			} else {
				o.ModelDefaults[task] = key
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if o.ModelDefaults == nil {
		return map[string]string{}, nil
	}
	return o.ModelDefaults, nil
}

// usable says which providers orgID can call now (every one without a key
// ring).
func (s *EnrichmentService) usable(ctx context.Context, orgID string) (func(string) bool, error) {
	if s.Keys == nil {
		return func(string) bool { return true }, nil
	}
	return s.Keys.Usable(ctx, orgID)
}

// DisplayName is a model's label: its display name, else its key.
func DisplayName(m model.Info) string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Key.String()
}
