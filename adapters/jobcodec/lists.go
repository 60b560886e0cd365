package jobcodec

import (
	"slices"
	"strconv"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
)

// The nested lists of some payloads, written without building their maps.

// appendEach writes a JSON array of n objects, each listed by fill.
func appendEach(b []byte, n int, sorted bool, fill func(ps []pair, i int) []pair) ([]byte, error) {
	ps := getPairs()
	defer putPairs(ps)
	b = append(b, '[')
	var err error
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendObject(b, fill((*ps)[:0], i), nil, nil, sorted); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// breakdowns is a model_completed event's expertise_breakdown: its keys
// sorted in stores too, as it always was.
type breakdowns []job.Breakdown

func (bd breakdowns) appendTo(b []byte, _ bool) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, x := range bd {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"cost":`...)
		b = strconv.AppendInt(b, x.Cost, 10)
		b = append(b, `,"cost_usd":`...)
		if b, err = appendFloat(b, model.USD(x.Cost)); err != nil {
			return nil, err
		}
		b = append(b, `,"key":`...)
		if b, err = appendString(b, x.Key); err != nil {
			return nil, err
		}
		b = append(b, `,"name":`...)
		if b, err = appendString(b, x.Name); err != nil {
			return nil, err
		}
		b = append(b, `,"success":`...)
		b = strconv.AppendBool(b, x.Success)
		b = append(b, `,"tokens":`...)
		b = strconv.AppendInt(b, int64(x.Tokens), 10)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// entityResults is an entity_completed event's results.
type entityResults []job.EntityResult

func (rs entityResults) appendTo(b []byte, sorted bool) ([]byte, error) {
	return appendEach(b, len(rs), sorted, func(ps []pair, i int) []pair {
		r := rs[i]
		ps = append(ps, strPair("model", r.Model), boolPair("success", r.Success), anyPair("result", r.Result),
			nullablePair("record_id", r.RecordID), int64Pair("cost", r.Cost), usdPair("cost_usd", r.Cost),
			intPair("input_tokens", r.InputTokens), intPair("output_tokens", r.OutputTokens),
			int64Pair("processing_time_ms", r.ProcessingMS), strPair("strategy", r.Strategy), boolPair("sandbox", r.Sandbox))
		if r.WebSearchCalls > 0 {
			ps = append(ps, intPair("web_search_calls", r.WebSearchCalls))
		}
		if !r.Success {
			ps = append(ps, strPair("error_message", r.ErrorMessage), strPair("error_code", r.ErrorCode))
		}
		return ps
	})
}

// questions is a sample clarification pause's questions.
type questions []job.SampleQuestion

func (qs questions) appendTo(b []byte, sorted bool) ([]byte, error) {
	return appendEach(b, len(qs), sorted, func(ps []pair, i int) []pair {
		q := qs[i]
		return append(ps, strPair("id", q.ID), strPair("label", q.Label), strPair("text", q.Text),
			anyPair("options", options(q.Options)), boolPair("allow_multiple", q.AllowMultiple),
			nullablePair("default_option_id", q.DefaultOptionID))
	})
}

type options []job.SampleOption

func (os options) appendTo(b []byte, sorted bool) ([]byte, error) {
	return appendEach(b, len(os), sorted, func(ps []pair, i int) []pair {
		return append(ps, strPair("id", os[i].ID), strPair("label", os[i].Label))
	})
}

// answers is a job_continued event's answers, by question id: an object
// ({} without any).
type answers job.Answers

func (as answers) appendTo(b []byte, sorted bool) ([]byte, error) {
	ids := make([]string, 0, len(as))
	for id := range as {
		ids = append(ids, id)
	}
	if sorted {
		slices.Sort(ids)
	}
	b = append(b, '{')
	var err error
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, id); err != nil {
			return nil, err
		}
		b = append(b, `:{"option_ids":`...)
		if b, err = appendStrings(b, as[id].OptionIDs); err != nil { // [] when none
			return nil, err
		}
		b = append(b, `,"text":`...)
		if b, err = appendString(b, as[id].Text); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// decisions is an arbitration_completed event's decisions, written as
// encoding/json writes job.Decision (path, value, reason when there is
// one), [] without any.
type decisions []job.Decision

func (ds decisions) appendTo(b []byte, _ bool) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		if b, err = appendString(b, d.Path); err != nil {
			return nil, err
		}
		b = append(b, `,"value":`...)
		if b, err = appendJSON(b, d.Value, true); err != nil {
			return nil, err
		}
		if d.Reason != "" {
			b = append(b, `,"reason":`...)
			if b, err = appendString(b, d.Reason); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}
