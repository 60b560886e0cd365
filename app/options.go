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

// ModelOption is one model in the options listing.
type ModelOption struct {
	Key               string `json:"key"`
	Provider          string `json:"provider"`
	Model             string `json:"model"`
	DisplayName       string `json:"display_name"`
	InputPrice        int64  `json:"input_price"`
	OutputPrice       int64  `json:"output_price"`
	IsAvailable       bool   `json:"is_available"`
	Sandbox           bool   `json:"sandbox,omitempty"`
	SupportsWebSearch bool   `json:"supports_web_search,omitempty"`
	SupportsVision    bool   `json:"supports_vision,omitempty"`
	SupportsPDFInput  bool   `json:"supports_pdf_input,omitempty"`
	ContextLength     int    `json:"context_length,omitempty"`
}

// DefaultModel is what auto resolves to.
type DefaultModel struct {
	Key           string   `json:"key"`
	DisplayName   string   `json:"display_name"`
	Overall       *float64 `json:"overall"`
	Pinned        bool     `json:"pinned"`
	Source        string   `json:"source"`
	ScenarioCount int      `json:"scenario_count"`
	ScenarioNames []string `json:"scenario_names"`
}

// Options is GET /api/enrichment/options.
type Options struct {
	Models                 []ModelOption     `json:"models"`
	Languages              map[string]string `json:"languages"`
	Strategies             []string          `json:"strategies"`
	DefaultModels          []DefaultModel    `json:"default_models"`
	DefaultModelsWebSearch []DefaultModel    `json:"default_models_web_search"`
}

// Options lists models (prices in micro-credits per million tokens),
// languages, strategies and what auto currently resolves to.
func (s *EnrichmentService) Options() Options {
	ms := s.Catalog.Models()
	o := Options{Models: make([]ModelOption, 0, len(ms)), Languages: Languages,
		DefaultModels: []DefaultModel{}, DefaultModelsWebSearch: []DefaultModel{}}
	for _, m := range ms {
		o.Models = append(o.Models, ModelOption{Key: m.Key.String(), Provider: m.Key.Provider, Model: m.Key.Model,
			DisplayName: m.DisplayName, InputPrice: m.Price.InputPerMTok, OutputPrice: m.Price.OutputPerMTok,
			IsAvailable: true, Sandbox: m.Sandbox, SupportsWebSearch: m.WebSearch, SupportsVision: m.Vision,
			SupportsPDFInput: m.PDFInput, ContextLength: m.ContextLength})
	}
	for _, st := range enrichment.Strategies() {
		o.Strategies = append(o.Strategies, string(st))
	}
	if p, err := modelsel.Select(ms, "", modelsel.Needs{}); err == nil {
		o.DefaultModels = append(o.DefaultModels, defaultModel(p))
	}
	if p, err := modelsel.Select(ms, "", modelsel.Needs{WebSearch: true}); err == nil {
		o.DefaultModelsWebSearch = append(o.DefaultModelsWebSearch, defaultModel(p))
	}
	return o
}

func defaultModel(p modelsel.Pick) DefaultModel {
	return DefaultModel{Key: p.Model.Key.String(), DisplayName: displayName(p.Model), Pinned: p.Pinned,
		Source: p.Source, ScenarioNames: []string{}}
}

func displayName(m model.Info) string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Key.String()
}
