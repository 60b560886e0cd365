// Package modelsel resolves the literal "auto" to one model: the organization's
// pinned default, else the best benchmarked model, else the first configured
// real model; sandbox models only when nothing real is configured.
package modelsel

import (
	"errors"
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
}

// Pick is the outcome of automatic selection.
type Pick struct {
	Model  model.Info
	Pinned bool
	// Source says where the pick came from: pinned, benchmark, configured or sandbox.
	Source string
}

func capable(m model.Info, n Needs) bool {
	return (!n.WebSearch || m.WebSearch) && (!n.Vision || m.Vision) && (!n.PDFInput || m.PDFInput)
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
