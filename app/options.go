package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
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
const TaskEnrichment = "enrichment"

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
	ms := s.Catalog.Models()
	o := Options{Models: ms, Available: map[string]bool{}, Languages: Languages, Strategies: enrichment.Strategies(),
		Defaults: map[string]modelsel.Pick{}, DefaultsWebSearch: map[string]modelsel.Pick{}}
	for _, m := range modelsel.Available(ms, usable) {
		o.Available[m.Key.String()] = true
	}
	if p, err := modelsel.SelectAvailable(ms, usable, "", modelsel.Needs{}); err == nil {
		o.Defaults[TaskEnrichment] = p
	}
	if p, err := modelsel.SelectAvailable(ms, usable, "", modelsel.Needs{WebSearch: true}); err == nil {
		o.DefaultsWebSearch[TaskEnrichment] = p
	}
	return o, nil
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
