package app

import (
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
	Models     []model.Info
	Languages  map[string]string
	Strategies []enrichment.Strategy
	// Defaults and DefaultsWebSearch are what auto resolves to, by task
	// type (enrichment, schema_generation); a task is absent when nothing
	// resolves.
	Defaults, DefaultsWebSearch map[string]modelsel.Pick
}

// TaskEnrichment is the task type of enrichment's automatic selection.
const TaskEnrichment = "enrichment"

// TaskSchemaGeneration is the task type of schema generation's (and AI
// edit's) automatic selection; no per-task pin exists yet, so it resolves
// like enrichment's.
const TaskSchemaGeneration = "schema_generation"

// Options lists models, languages, strategies and what auto currently
// resolves to.
func (s *EnrichmentService) Options() Options {
	ms := s.Catalog.Models()
	o := Options{Models: ms, Languages: Languages, Strategies: enrichment.Strategies(),
		Defaults: map[string]modelsel.Pick{}, DefaultsWebSearch: map[string]modelsel.Pick{}}
	if p, err := modelsel.Select(ms, "", modelsel.Needs{}); err == nil {
		o.Defaults[TaskEnrichment] = p
		o.Defaults[TaskSchemaGeneration] = p // what schema generation and AI edit use for auto
	}
	if p, err := modelsel.Select(ms, "", modelsel.Needs{WebSearch: true}); err == nil {
		o.DefaultsWebSearch[TaskEnrichment] = p
	}
	return o
}

// DisplayName is a model's label: its display name, else its key.
func DisplayName(m model.Info) string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Key.String()
}
