package main

import (
	"encoding/json"

	"github.com/spf13/cobra"
)

// generateFlags are the flags of schemas generate.
type generateFlags struct {
	data, file, model, language string
	save, follow, events        bool
	attach                      []string
}

func (c *cli) schemasGenerateCmd() *cobra.Command {
	var f generateFlags
	cmd := &cobra.Command{
		Use:   "generate (-d JSON | -f FILE)",
		Short: "Generate a JSON Schema from sample entities and attachments",
		Long: `generate starts a schema generation job from sample entities (a JSON object,
or an array of objects of the same kind), follows it and prints the result:
the generated schema, and with --save the id of the saved schema.

--attach FILE (repeatable) uploads documents or images first; the model
reads them with the samples (a product sheet, a company's annual report).
--events prints every event as one JSON line; --follow=false only starts
the job and prints its id.`,
		Example: `  enrich schemas generate -d '{"name":"Acme","founded":1990}' --save
  enrich schemas generate -f samples.json --model sandbox::echo --language fr
  enrich schemas generate -d '{"name":"Acme"}' --attach annual-report.pdf --save`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, src, err := c.readArg(f.data, f.file, "the samples", "'{...}' or '[{...}, ...]'")
			if err != nil {
				return err
			}
			var samples any
			if err := json.Unmarshal(raw, &samples); err != nil {
				return usagef("the samples in %s are not valid JSON: %v", src, err)
			}
			switch s := samples.(type) {
			case map[string]any:
			case []any:
				if len(s) == 0 {
					return usagef("the samples in %s are an empty array", src)
				}
			default:
				return usagef("the samples in %s must be a JSON object or an array of objects", src)
			}
			body := map[string]any{"entity_samples": json.RawMessage(raw)}
			if err := c.attachTo(cmd, body, f.attach); err != nil {
				return err
			}
			if f.model != "" {
				body["model"] = f.model
			}
			if f.language != "" {
				body["language"] = f.language
			}
			if f.save {
				body["save_schema"] = true
			}
			return c.startJob(cmd, "/api/schema/generate/stream", body, f.follow, f.events)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.data, "data", "d", "", "sample entities: a JSON object or an array of objects")
	fl.StringVarP(&f.file, "file", "f", "", "a file holding the samples' JSON (- for standard input)")
	fl.StringVarP(&f.model, "model", "m", "", "model key (default: the server's auto choice)")
	fl.StringVar(&f.language, "language", "", "ISO 639-1 language of the schema's titles and descriptions")
	fl.BoolVar(&f.save, "save", false, "save the generated schema in the organization")
	fl.BoolVar(&f.follow, "follow", true, "follow the job to its end (false: print the job id and return)")
	fl.BoolVar(&f.events, "events", false, "print every event as a JSON line (NDJSON) instead of progress and result")
	attachFlag(cmd, &f.attach, "the job")
	_ = cmd.MarkFlagFilename("file", "json")
	_ = cmd.RegisterFlagCompletionFunc("model", c.completeModels)
	return cmd
}
