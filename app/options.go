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
	// type (enrichment, schema_generation, sample_generation); a task is
	// absent when nothing resolves.
	Defaults, DefaultsWebSearch map[string]modelsel.Pick
}

// The task types of automatic selection, as the app names them.
const (
	TaskEnrichment       = modelsel.TaskEnrichment
	TaskSchemaGeneration = modelsel.TaskSchemaGeneration
	TaskSampleGeneration = modelsel.TaskSampleGeneration
)

// ModelService answers which models an organization can use and what auto
// resolves to (GET /api/enrichment/options, the pinned defaults), and
// resolves the model keys of every job's request.
type ModelService struct {
	// Orgs keeps the organizations' pinned default models (nil: none).
	Orgs    ports.OrgStore
	Catalog ports.ModelCatalog
	// Keys tells which providers the organization can call and holds its
	// own providers (nil: every provider on its own configuration).
	Keys *KeyRing
}

// NewModelService answers from catalog, the organizations' pinned defaults
// in orgs and their keys and providers in keys (orgs and keys may be nil).
func NewModelService(orgs ports.OrgStore, catalog ports.ModelCatalog, keys *KeyRing) *ModelService {
	return &ModelService{Orgs: orgs, Catalog: catalog, Keys: keys}
}

// Options lists models (with whether the organization can use each),
// languages, strategies and what auto currently resolves to for it.
func (s *ModelService) Options(ctx context.Context, p *access.Principal) (Options, error) {
	if err := access.Authorize(p, access.ActEnrichmentOptions); err != nil {
		return Options{}, err
	}
	usable, err := s.picker().Usable(ctx, p.OrgID)
	if err != nil {
		return Options{}, err
	}
	pinned, err := s.picker().Pinned(ctx, p.OrgID)
	if err != nil {
		return Options{}, err
	}
	ms := s.Catalog.Models()
	o := Options{Models: ms, Available: map[string]bool{}, Languages: Languages, Strategies: enrichment.Strategies(),
		Defaults: map[string]modelsel.Pick{}, DefaultsWebSearch: map[string]modelsel.Pick{}}
	for _, m := range modelsel.Available(ms, usable) {
		o.Available[m.Key.String()] = true
	}
	// The organization's own providers' models are listed and available;
	// automatic selection takes one only when pinned.
	own, err := s.orgModels(ctx, p.OrgID)
	if err != nil {
		return Options{}, err
	}
	for _, m := range own {
		o.Available[m.Key.String()] = true
	}
	o.Models = append(ms[:len(ms):len(ms)], own...)
	for _, task := range modelsel.Tasks() {
		if p, err := modelsel.SelectOwn(ms, own, usable, pinned[task], modelsel.Needs{}); err == nil {
			o.Defaults[task] = p
		}
		if task == modelsel.TaskSchemaGeneration {
			continue // the reference previews web search for enrichment and samples only
		}
		if p, err := modelsel.SelectOwn(ms, own, usable, pinned[task], modelsel.Needs{WebSearch: true}); err == nil {
			o.DefaultsWebSearch[task] = p
		}
	}
	return o, nil
}

// ModelDefaults returns the organization's pinned default models by task.
func (s *ModelService) ModelDefaults(ctx context.Context, p *access.Principal) (map[string]string, error) {
	if err := access.Authorize(p, access.ActGetModelDefaults); err != nil {
		return nil, err
	}
	d, err := s.picker().Pinned(ctx, p.OrgID)
	if d == nil {
		d = map[string]string{}
	}
	return d, err
}

// SetModelDefaults pins (a composite key) or unpins (nil) the default model
// of the tasks named in change; other tasks keep theirs. A model must be in
// the catalog or be one of the organization's own providers' models;
// whether the organization can call it is decided at each
// use, so a pinned model without a usable key is passed over, not refused
// here.
func (s *ModelService) SetModelDefaults(ctx context.Context, p *access.Principal, change map[string]*string) (map[string]string, error) {
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
	own, err := s.orgModels(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	if task, err := modelsel.CheckDefaults(check, append(s.Catalog.Models(), own...)); err != nil {
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

// picker is the service's automatic selection.
func (s *ModelService) picker() *ModelPicker {
	return &ModelPicker{Catalog: s.Catalog, Keys: s.Keys, Orgs: s.Orgs}
}

// AutoPick resolves auto for one task (see ModelPicker.Pick).
func (s *ModelService) AutoPick(ctx context.Context, orgID, task string, n modelsel.Needs) (modelsel.Pick, error) {
	return s.picker().Pick(ctx, orgID, task, n)
}

// DisplayName is a model's label: its display name, else its key.
func DisplayName(m model.Info) string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Key.String()
}

// knownModel checks a composite key against the catalog.
func (s *ModelService) knownModel(field, k string) (model.Info, error) {
	key, err := model.ParseKey(k)
	if err != nil {
		return model.Info{}, coded(ports.ErrInvalid, "invalid_model", "%s: %v", field, err).(*Error).at(field)
	}
	m, err := s.Catalog.Model(key)
	if err != nil {
		return model.Info{}, coded(ports.ErrInvalid, "invalid_model", "%s: unknown model %q; GET /api/enrichment/options lists them", field, k).(*Error).at(field)
	}
	return m, nil
}
