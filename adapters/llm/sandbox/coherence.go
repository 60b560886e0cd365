package sandbox

import (
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/attachment"
)

// coherence answers the attachment coherence call (ports.
// TaskAttachmentCoherence) from the documents' facts, by one rule: the
// documents that name a type ("type:", "object_type:" or "entity_type:")
// must name the same one, else the set is incoherent (the documents of
// other types are excluded); documents that name one thing ("name:") are a
// single entity when they all name the same, instances of the type
// otherwise.
func coherence(in TaskInput) any {
	var kinds, names []string
	typeOf := make([]string, len(in.Docs))
	for i, d := range in.Docs {
		one := []Document{d}
		for _, k := range []string{"type", "object_type", "entity_type"} {
			if v, ok := fact(one, k); ok {
				typeOf[i] = strings.ToLower(strings.TrimSpace(v))
				break
			}
		}
		if typeOf[i] != "" && !contains(kinds, typeOf[i]) {
			kinds = append(kinds, typeOf[i])
		}
		if v, ok := fact(one, "name"); ok && !contains(names, v) {
			names = append(names, v)
		}
	}
	ref := 0
	out := map[string]any{"reference_attachment": ref}
	switch {
	case len(kinds) > 1:
		var ex []any
		for i, t := range typeOf {
			if t != "" && t != kinds[0] {
				ex = append(ex, i)
			}
		}
		out["mode"], out["excluded_attachments"] = string(attachment.Incoherent), ex
		out["reason"] = fmt.Sprintf("the documents describe different kinds of things: %s", strings.Join(kinds, ", "))
	case len(names) > 1:
		out["mode"] = string(attachment.InstancesOfType)
		out["reason"] = fmt.Sprintf("the documents describe %d different things: %s", len(names), strings.Join(names, ", "))
	default:
		out["mode"] = string(attachment.SingleEntity)
		out["reason"] = "the documents describe the same thing"
	}
	if len(kinds) > 0 {
		out["object_type"] = kinds[0]
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
