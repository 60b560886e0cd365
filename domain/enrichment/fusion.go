package enrichment

import "github.com/entityenrich/enrich/domain/fusion"

// RecordFusion is a fused record: several models' answers merged field by
// field (domain/fusion), by auto-fusion at the end of a multi-model
// enrichment or by POST /api/fusion/merge.
const RecordFusion RecordType = "fusion"

// FusionSource is one record a fused record merges.
type FusionSource struct {
	RecordID  string `json:"record_id"`
	ModelName string `json:"model_name"`
}

// Fusion is what a fused record keeps besides its merged output.
type Fusion struct {
	// Sources are the merged records, in merge (tie-break) order.
	Sources []FusionSource `json:"fusion_sources"`
	// Provenance maps each field path to the models whose value was chosen.
	Provenance map[string]fusion.Provenance `json:"provenance"`
	Summary    fusion.Summary               `json:"fusion"`
	Report     fusion.Report                `json:"conflict_report"`
	// ArbitrationCost is the arbiter's cost in micro-credits (0: none).
	ArbitrationCost int64 `json:"arbitration_cost,omitempty"`
}
