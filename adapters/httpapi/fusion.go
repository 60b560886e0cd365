package httpapi

import (
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/fusion"
)

// fusionFields are a fused record's fields: the reference's fusion_sources,
// fusion_method and fusion_arbitration_model, and ours: the fusion
// summary, the per-field provenance and the conflict report.
type fusionFields struct {
	FusionSources          []enrichment.FusionSource    `json:"fusion_sources"`
	FusionMethod           string                       `json:"fusion_method"`
	FusionArbitrationModel *string                      `json:"fusion_arbitration_model"`
	Fusion                 fusion.Summary               `json:"fusion"`
	Provenance             map[string]fusion.Provenance `json:"provenance"`
	ConflictReport         fusion.Report                `json:"conflict_report"`
}

func toFusionFields(rc *enrichment.Record) *fusionFields {
	if rc.Fusion == nil {
		return nil
	}
	f := rc.Fusion
	out := &fusionFields{FusionSources: f.Sources, FusionMethod: f.Summary.Method, Fusion: f.Summary, Provenance: f.Provenance,
		ConflictReport: f.Report}
	if out.FusionSources == nil {
		out.FusionSources = []enrichment.FusionSource{}
	}
	if f.Summary.ArbitrationModel != "" {
		out.FusionArbitrationModel = &f.Summary.ArbitrationModel
	}
	return out
}
