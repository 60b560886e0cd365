package main

import (
	"encoding/json"
	"net/http"
	"os"

	"github.com/spf13/cobra"
)

// compatCmds are the first CLI's commands, kept working (hidden, with a
// deprecation note naming the command that replaces each).
func (c *cli) compatCmds() []*cobra.Command {
	run := &cobra.Command{
		Use:        "run SCHEMA_ID JSON [MODEL [STRATEGY]]",
		Short:      "Start an enrichment and follow it",
		Deprecated: `use "enrich enrich SCHEMA_ID -d JSON [--model M] [--strategy S]"`,
		Args:       args(cobra.RangeArgs(2, 4)),
		RunE: func(cmd *cobra.Command, a []string) error {
			entity, err := checkObject([]byte(a[1]), "the entity", "the JSON argument")
			if err != nil {
				return err
			}
			f := enrichFlags{follow: true}
			if len(a) > 2 {
				f.models = []string{a[2]}
			}
			if len(a) > 3 {
				f.strategy = a[3]
			}
			return c.startEnrichment(cmd, a[0], entity, f)
		},
	}
	stream := &cobra.Command{
		Use:        "stream JOB_ID",
		Deprecated: `use "enrich jobs follow JOB_ID"`,
		Args:       args(cobra.ExactArgs(1)),
		RunE:       func(cmd *cobra.Command, a []string) error { return c.follow(cmd, a[0], !c.table()) },
	}
	cancel := &cobra.Command{
		Use:        "cancel JOB_ID",
		Deprecated: `use "enrich jobs cancel JOB_ID"`,
		Args:       args(cobra.ExactArgs(1)),
		RunE:       func(cmd *cobra.Command, a []string) error { return c.jobAction(cmd, "cancel", a[0]) },
	}
	record := &cobra.Command{
		Use:        "record RECORD_ID",
		Deprecated: `use "enrich records get RECORD_ID"`,
		Args:       args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var raw json.RawMessage
			if err := c.call(cmd, http.MethodGet, "/api/records/"+a[0], nil, &raw); err != nil {
				return err
			}
			return c.printJSON(raw)
		},
	}
	schemaCreate := &cobra.Command{
		Use:        "schema-create NAME FILE",
		Deprecated: `use "enrich schemas create -f FILE --name NAME"`,
		Args:       args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			doc, err := os.ReadFile(a[1])
			if err != nil {
				return usageError{err}
			}
			doc, err = checkObject(doc, "the JSON Schema", a[1])
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.call(cmd, http.MethodPost, "/api/schema/saved", map[string]any{"name": a[0], "schema": json.RawMessage(doc)}, &raw); err != nil {
				return err
			}
			return c.printJSON(raw)
		},
	}
	cmds := []*cobra.Command{run, stream, cancel, record, schemaCreate}
	for _, cmd := range cmds {
		cmd.Hidden = true
	}
	return cmds
}
