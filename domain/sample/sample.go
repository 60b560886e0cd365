// Package sample holds the rules of sample generation: how many samples a
// job may make, the naming conventions of their fields, the instances a job
// plans, the field set sample 1 fixes for the others, and the clarification
// questions a job may pause on.
package sample

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/entityenrich/enrich/domain/job"
)

// Limits of a sample generation request.
const (
	MinCount          = 1
	MaxCount          = 20
	MaxFields         = 100
	MaxFieldName      = 100
	MaxEntityType     = 200
	MaxInstance       = 200
	MaxInstructions   = 4000
	MaxQuestions      = 5
	MaxOptions        = 8
	DefaultParallel   = 4
	MaxRetries        = 3
	SourceDescribe    = "describe_subject"
	SourceTranscribe  = "transcribe_data"
	SourceStructure   = "structure_only"
	DefaultConvention = ConventionAuto
)

// Convention is a field naming convention.
type Convention string

// The naming conventions (REFERENCE.md: auto, snake_case, camelCase).
const (
	ConventionAuto  Convention = "auto"
	ConventionSnake Convention = "snake_case"
	ConventionCamel Convention = "camelCase"
)

// ParseConvention reads a naming convention; empty is auto.
func ParseConvention(s string) (Convention, error) {
	switch Convention(s) {
	case "", ConventionAuto:
		return ConventionAuto, nil
	case ConventionSnake, ConventionCamel:
		return Convention(s), nil
	}
	return "", fmt.Errorf("naming_convention must be auto, snake_case or camelCase, not %q", s)
}

// words splits a field name into lower-case words at spaces, punctuation,
// underscores and case changes.
func words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = nil
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) || unicode.IsDigit(cur[len(cur)-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]))):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// Apply names a field by the convention; auto keeps the name as given (a
// name with spaces becomes snake_case, as a JSON key should not hold them).
func (c Convention) Apply(name string) string {
	ws := words(name)
	if len(ws) == 0 {
		return name
	}
	switch c {
	case ConventionCamel:
		for i := 1; i < len(ws); i++ {
			rs := []rune(ws[i])
			rs[0] = unicode.ToUpper(rs[0])
			ws[i] = string(rs)
		}
		return strings.Join(ws, "")
	case ConventionSnake:
		return strings.Join(ws, "_")
	}
	if strings.ContainsAny(name, " \t-") {
		return strings.Join(ws, "_")
	}
	return name
}

// Instances are the instances a job plans, one per sample: the typical
// objects the client named, in order, then "<entity type> #n".
func Instances(entityType string, typical []string, n int) []string {
	out := make([]string, n)
	for i := range out {
		if i < len(typical) && strings.TrimSpace(typical[i]) != "" {
			out[i] = strings.TrimSpace(typical[i])
		} else {
			out[i] = fmt.Sprintf("%s #%d", strings.TrimSpace(entityType), i+1)
		}
	}
	return out
}

// FieldSet is the field set sample 1 fixes: the requested fields (named by
// the convention) that it has, in the requested order, then its other
// fields in key order.
func FieldSet(first map[string]any, requested []string, c Convention) []string {
	var out []string
	for _, f := range requested {
		if k := c.Apply(f); !slices.Contains(out, k) {
			if _, ok := first[k]; ok {
				out = append(out, k)
			}
		}
	}
	var rest []string
	for k := range first {
		if !slices.Contains(out, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Fit checks a later sample against the field set: every field present
// (null allowed); fields outside the set are dropped. The error lists the
// missing fields.
func Fit(s map[string]any, fields []string) (map[string]any, error) {
	out := make(map[string]any, len(fields))
	var missing []string
	for _, f := range fields {
		v, ok := s[f]
		if !ok {
			missing = append(missing, f)
			continue
		}
		out[f] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the sample lacks the fields %s; every sample has exactly the fields %s",
			strings.Join(missing, ", "), strings.Join(fields, ", "))
	}
	return out, nil
}

// CheckQuestions validates a model's clarification questions: ids unique
// and non-empty, text set, 2..MaxOptions options with unique ids, and a
// default option among them.
func CheckQuestions(qs []job.SampleQuestion) error {
	if len(qs) > MaxQuestions {
		return fmt.Errorf("at most %d questions", MaxQuestions)
	}
	seen := map[string]bool{}
	for i, q := range qs {
		if q.ID == "" || seen[q.ID] {
			return fmt.Errorf("questions.%d: the id must be set and unique", i)
		}
		seen[q.ID] = true
		if strings.TrimSpace(q.Text) == "" {
			return fmt.Errorf("questions.%d: text is empty", i)
		}
		if len(q.Options) < 2 || len(q.Options) > MaxOptions {
			return fmt.Errorf("questions.%d: 2 to %d options", i, MaxOptions)
		}
		ids := map[string]bool{}
		for k, o := range q.Options {
			if o.ID == "" || ids[o.ID] {
				return fmt.Errorf("questions.%d.options.%d: the id must be set and unique", i, k)
			}
			ids[o.ID] = true
		}
		if q.DefaultOptionID != "" && !ids[q.DefaultOptionID] {
			return fmt.Errorf("questions.%d: default_option_id %q is not an option", i, q.DefaultOptionID)
		}
	}
	return nil
}

// Resolve gives every question its answer: the client's (options outside
// the question's are dropped; several only where allow_multiple), else the
// question's default option (auto_answer, or a question left unanswered).
func Resolve(qs []job.SampleQuestion, given job.Answers) job.Answers {
	out := job.Answers{}
	for _, q := range qs {
		a := given[q.ID]
		var ids []string
		for _, id := range a.OptionIDs {
			if slices.ContainsFunc(q.Options, func(o job.SampleOption) bool { return o.ID == id }) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if !q.AllowMultiple && len(ids) > 1 {
			ids = ids[:1]
		}
		if len(ids) == 0 && strings.TrimSpace(a.Text) == "" {
			if q.DefaultOptionID != "" {
				ids = []string{q.DefaultOptionID}
			} else if len(q.Options) > 0 {
				ids = []string{q.Options[0].ID}
			}
		}
		out[q.ID] = job.Answer{OptionIDs: ids, Text: strings.TrimSpace(a.Text)}
	}
	return out
}
