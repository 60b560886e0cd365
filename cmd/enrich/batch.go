package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
)

// batchFlags are the batch command's flags.
type batchFlags struct {
	enrichFlags
	arbitration, classification string
}

func (c *cli) batchCmd() *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch SCHEMA_ID (-d JSON | -f FILE)",
		Short: "Enrich many entities against a saved schema in one job",
		Long: `batch starts one batch enrichment job for a JSON array of entities (objects of
known attributes) against a saved schema, follows its event stream and prints
the batch's summary: each entity's outcome and record ids.

Entities the schema's input contract refuses are skipped (listed when the batch
starts); one entity's failure does not fail the batch. With several models each
entity's answers are fused (--arbitration-model names an arbiter for their
conflicts); --classification-model checks each entity's kind first and skips a
confident mismatch (a batch never pauses). --attach FILE (repeatable) uploads
files first; every entity's enrichment reads them. --events prints every
event as one JSON line; --follow=false only starts the job and prints its id.

Exit code 1 when the job fails or is cancelled.`,
		Example: `  enrich batch SCHEMA_ID -d '[{"name":"Acme"},{"name":"Globex"}]'
  enrich batch SCHEMA_ID -f entities.json -m sandbox::echo,sandbox::alt --arbitration-model sandbox::echo
  JOB=$(enrich batch SCHEMA_ID -f entities.json --follow=false -q)
  enrich batch SCHEMA_ID -f entities.json --attach catalogue.pdf`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: c.completeSchemas,
		RunE: func(cmd *cobra.Command, a []string) error {
			raw, src, err := c.readArg(f.data, f.file, "the entities", "'[{...}, ...]'")
			if err != nil {
				return err
			}
			var entities []map[string]any
			if err := json.Unmarshal(raw, &entities); err != nil || len(entities) == 0 {
				return usagef("%s must be a non-empty JSON array of entity objects", src)
			}
			return c.startBatch(cmd, a[0], entities, f)
		},
	}
	c.enrichFlags(cmd, &f.enrichFlags)
	cmd.Flags().StringVar(&f.arbitration, "arbitration-model", "", "arbiter of the fused answers' conflicts (a model key or auto)")
	cmd.Flags().StringVar(&f.classification, "classification-model", "", "check each entity's kind first (a model key or auto)")
	return cmd
}

func (c *cli) startBatch(cmd *cobra.Command, schemaID string, entities []map[string]any, f batchFlags) error {
	body := map[string]any{"schema_id": schemaID, "entities": entities}
	if err := c.attachTo(cmd, body, f.attach); err != nil {
		return err
	}
	if len(f.models) > 0 {
		body["models"] = f.models
	}
	if f.strategy != "" {
		body["strategy"] = f.strategy
	}
	if f.arbitration != "" {
		body["arbitration_model"] = f.arbitration
	}
	if f.classification != "" {
		body["classification_model"] = f.classification
	}
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodPost, "/api/batch/start", body, &raw); err != nil {
		return err
	}
	var started struct {
		JobID   string `json:"job_id"`
		Total   int    `json:"total"`
		Invalid []struct {
			Index  int    `json:"index"`
			Detail string `json:"detail"`
		} `json:"invalid_entities"`
	}
	if err := json.Unmarshal(raw, &started); err != nil || started.JobID == "" {
		return fmt.Errorf("the server did not answer a job id: %s", raw)
	}
	for _, e := range started.Invalid {
		fmt.Fprintf(c.io.err, "entity %d is skipped: %s\n", e.Index, e.Detail)
	}
	if !f.follow {
		return c.show(raw, started.JobID, func(t *tw) {
			t.row("JOB", started.JobID)
			t.row("ENTITIES", fmt.Sprint(started.Total))
			t.Flush()
			fmt.Fprintf(c.io.err, "Started. Follow it with: enrich jobs follow %s\n", started.JobID)
		})
	}
	return c.follow(cmd, started.JobID, f.events)
}
