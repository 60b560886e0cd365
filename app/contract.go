package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
)

// CodeInputContract is the code of an entity its schema's input contract
// refuses (400, before any spend).
const CodeInputContract = "input_contract_unsatisfied"

// checkContract checks entity against the input contract of the schema
// document doc (the published contract once schemas have one) and returns
// the contract's preserve paths. A refusal is 400 input_contract_unsatisfied
// with the offending paths.
func checkContract(doc, entity map[string]any) ([][]string, error) {
	c := schema.ContractOf(doc)
	if vs := c.Check(entity); len(vs) > 0 {
		return nil, contractError(vs)
	}
	var preserve [][]string
	for _, p := range c.Preserve {
		preserve = append(preserve, c.Path(p))
	}
	return preserve, nil
}

// contractError is the refusal of an entity: the detail says why for each
// path, Paths lists them.
func contractError(vs []schema.Violation) error {
	var b strings.Builder
	b.WriteString("entity_data does not satisfy the schema's input contract: ")
	for i, v := range vs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", v.Path, v.Reason)
	}
	return &Error{Kind: schema.ErrContractUnsatisfied, Code: CodeInputContract, Field: "entity_data", Detail: b.String(), Paths: schema.Paths(vs)}
}

// checkPreserved checks each preserved value of entity against its
// property's schema in doc (localized): the value goes into the result as
// sent, so it must fit there. A misfit is input_contract_unsatisfied
// naming the path.
func (s *Enricher) checkPreserved(ctx context.Context, doc, entity map[string]any, preserve [][]string) error {
	var vs []schema.Violation
	for _, path := range preserve {
		prop, ok := enrichment.PropertySchema(doc, path)
		if !ok {
			continue
		}
		v, _ := schema.Lookup(entity, path)
		raw, err := json.Marshal(prop)
		if err != nil {
			continue
		}
		val, err := s.Compiler.Compile(ctx, raw)
		if err != nil {
			continue // the whole schema's compilation reports it
		}
		if err := val.Validate(v); err != nil {
			vs = append(vs, schema.Violation{Path: strings.Join(path, "."),
				Reason: fmt.Sprintf("preserved value does not fit its property's schema (it is copied into the result as sent): %v", err)})
		}
	}
	if len(vs) > 0 {
		return contractError(vs)
	}
	return nil
}
