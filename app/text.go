package app

import (
	"github.com/entityenrich/enrich/domain/text"
)

// checkText refuses text that no store keeps as sent (see domain/text: NUL,
// a lone surrogate escape, bytes that are not UTF-8) in the request field
// named field, with 400 invalid_request naming the string or key at fault. v
// is a string, a []string, a decoded JSON value or raw JSON. HTTP callers
// are refused earlier (adapters/httpapi); this keeps the embedded library
// and any other caller to the same rule.
func checkText(field string, v any) error {
	f, ok := text.Check(v)
	if ok {
		return nil
	}
	switch {
	case f.Path == "":
		f.Path = field
	case field != "":
		f.Path = field + "." + f.Path
	}
	return Invalid(f.Path, "%s", f.Detail())
}

// checkEnrichText checks every string of an enrichment request.
func checkEnrichText(req EnrichRequest) error {
	for _, c := range []struct {
		field string
		v     any
	}{
		{"entity_data", req.EntityData}, {"schema_id", req.SchemaID}, {"models", req.Models},
		{"model", req.Model}, {"strategy", req.Strategy}, {"languages", req.Languages},
		{"classification_model", deref(req.ClassificationModel)}, {"arbitration_model", deref(req.ArbitrationModel)},
		{"attachment_ids", req.AttachmentIDs}, {"target_schema", req.TargetSchema},
	} {
		if err := checkText(c.field, c.v); err != nil {
			return err
		}
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
