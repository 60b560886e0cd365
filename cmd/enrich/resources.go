package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// The schemas command offers only the verbs whose route the server has
// (list, get, create, generate); edit, publish and delete arrive with theirs.
func (c *cli) schemasCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schemas",
		Short: "List, read and save JSON Schemas (alone: list)",
		Long: `schemas manages saved schemas: JSON Schema (2020-12) documents that describe
the structured output of an enrichment. Objects become their own expertise
domain; scalars form "general".`,
		Example: `  enrich schemas create -f company.json --name Company
  enrich schemas generate -d '{"name":"Acme","founded":1990}' --save
  enrich schemas list
  enrich schemas get SCHEMA_ID --output json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.listSchemas(cmd) },
	}
	cmd.AddCommand(c.schemasListCmd(), c.schemasGetCmd(), c.schemasCreateCmd(), c.schemasGenerateCmd())
	return cmd
}

func (c *cli) schemasListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List saved schemas",
		Example: `  enrich schemas list`,
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.listSchemas(cmd) },
	}
}

func (c *cli) schemasGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "get SCHEMA_ID",
		Short:             "Show a saved schema with its JSON Schema document",
		Example:           `  enrich schemas get SCHEMA_ID`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: c.completeSchemas,
		RunE:              func(cmd *cobra.Command, a []string) error { return c.getSchema(cmd, a[0]) },
	}
}

func (c *cli) getSchema(cmd *cobra.Command, id string) error {
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodGet, "/api/schema/saved/"+url.PathEscape(id), nil, &raw); err != nil {
		return err
	}
	var s schema
	_ = json.Unmarshal(raw, &s)
	return c.show(raw, s.ID, func(t *tw) {
		t.row("ID", s.ID)
		t.row("NAME", s.Name)
		t.row("DESCRIPTION", s.Description)
		t.row("PROPERTIES", s.Properties)
		t.row("CREATED", s.Created)
		t.Flush()
		doc, _ := json.MarshalIndent(s.Schema, "", "  ")
		fmt.Fprintf(c.io.out, "\n%s\n", doc)
	})
}

// schemaFlags are the flags of schemas create.
type schemaFlags struct {
	file, name, desc string
}

func (c *cli) schemasCreateCmd() *cobra.Command {
	var f schemaFlags
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Save a JSON Schema from a file",
		Long: `create saves the JSON Schema in FILE ("-" reads standard input). The name is
--name, else the schema's "title", else the file's base name.`,
		Example: `  enrich schemas create -f company.json --name Company
  SCHEMA=$(enrich schemas create -f company.json -q)
  enrich schemas create --name Company -f - <<'EOF'
  {"type":"object","properties":{"name":{"type":"string"}}}
  EOF`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.createSchema(cmd, f) },
	}
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "the JSON Schema document (- for standard input)")
	cmd.Flags().StringVar(&f.name, "name", "", "the schema's name")
	cmd.Flags().StringVar(&f.desc, "description", "", "what the schema is for")
	_ = cmd.MarkFlagFilename("file", "json")
	return cmd
}

func (c *cli) createSchema(cmd *cobra.Command, f schemaFlags) error {
	if f.file == "" {
		return usagef("give the JSON Schema with -f FILE")
	}
	doc, err := c.readJSONArg("", f.file, "the JSON Schema")
	if err != nil {
		return err
	}
	name := schemaName(f, doc)
	if name == "" {
		return usagef("--name is required when the schema comes from standard input and has no title")
	}
	body := map[string]any{"name": name, "schema": doc}
	if f.desc != "" {
		body["description"] = f.desc
	}
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodPost, "/api/schema/saved", body, &raw); err != nil {
		return err
	}
	var s schema
	_ = json.Unmarshal(raw, &s)
	return c.show(raw, s.ID, func(t *tw) {
		t.row("ID", "NAME", "PROPERTIES", "CREATED")
		t.row(s.ID, s.Name, s.Properties, s.Created)
	})
}

// schemaName is --name, else the document's title, else the file's base
// name ("" when none gives one).
func schemaName(f schemaFlags, doc json.RawMessage) string {
	if f.name != "" {
		return f.name
	}
	var t struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(doc, &t)
	if t.Title != "" || f.file == "-" {
		return t.Title
	}
	return strings.TrimSuffix(filepath.Base(f.file), filepath.Ext(f.file))
}

type schema struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Properties  int            `json:"property_count"`
	Created     string         `json:"created_at"`
	Schema      map[string]any `json:"schema"`
}

func (c *cli) listSchemas(cmd *cobra.Command) error {
	var all []schema
	items := []json.RawMessage{} // as the server wrote them, for JSON
	err := c.pages(cmd, "/api/schema/saved", url.Values{}, func(raw json.RawMessage) (string, error) {
		var p struct {
			Schemas []json.RawMessage `json:"schemas"`
			Next    *string           `json:"next_cursor"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", err
		}
		for _, item := range p.Schemas {
			var s schema
			if err := json.Unmarshal(item, &s); err != nil {
				return "", err
			}
			all = append(all, s)
			items = append(items, item)
		}
		if p.Next == nil {
			return "", nil
		}
		return *p.Next, nil
	})
	if err != nil {
		return err
	}
	switch {
	case c.quiet:
		for _, s := range all {
			fmt.Fprintln(c.io.out, s.ID)
		}
		return nil
	case c.table():
		t := newTW(c.io.out)
		t.row("ID", "NAME", "PROPERTIES", "CREATED")
		for _, s := range all {
			t.row(s.ID, s.Name, s.Properties, s.Created)
		}
		return t.Flush()
	}
	return c.printJSON(map[string]any{"schemas": items})
}

// pages gets path page after page; page returns the next cursor ("" at the
// end).
func (c *cli) pages(cmd *cobra.Command, path string, q url.Values, page func(json.RawMessage) (string, error)) error {
	for {
		var raw json.RawMessage
		p := path
		if len(q) > 0 {
			p += "?" + q.Encode()
		}
		if err := c.call(cmd, http.MethodGet, p, nil, &raw); err != nil {
			return err
		}
		next, err := page(raw)
		if err != nil || next == "" {
			return err
		}
		q.Set("cursor", next)
	}
}

func (c *cli) completeSchemas(cmd *cobra.Command, a []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(a) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var l struct {
		Schemas []schema `json:"schemas"`
	}
	if c.call(cmd, http.MethodGet, "/api/schema/saved?page_size=200", nil, &l) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, s := range l.Schemas {
		out = append(out, s.ID+"\t"+s.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (c *cli) optionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "options",
		Short:   "List the models and strategies the server offers",
		Example: `  enrich options`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var raw json.RawMessage
			if err := c.call(cmd, http.MethodGet, "/api/enrichment/options", nil, &raw); err != nil {
				return err
			}
			var o struct {
				Models []struct {
					Key       string `json:"key"`
					Name      string `json:"display_name"`
					Available bool   `json:"is_available"`
					Sandbox   bool   `json:"sandbox"`
					In        int    `json:"input_price_micro_credits"`
					Out       int    `json:"output_price_micro_credits"`
				} `json:"models"`
				Strategies []string `json:"strategy_names"`
				Defaults   map[string]struct {
					Key string `json:"key"`
				} `json:"default_models"` // by task
			}
			_ = json.Unmarshal(raw, &o)
			if c.quiet {
				for _, m := range o.Models {
					fmt.Fprintln(c.io.out, m.Key)
				}
				return nil
			}
			return c.show(raw, "", func(t *tw) {
				t.row("MODEL", "AVAILABLE", "SANDBOX", "µCREDITS/MTOK IN/OUT", "NAME")
				for _, m := range o.Models {
					t.row(m.Key, m.Available, m.Sandbox, strconv.Itoa(m.In)+"/"+strconv.Itoa(m.Out), m.Name)
				}
				t.Flush()
				var defs []string
				for _, task := range slices.Sorted(maps.Keys(o.Defaults)) {
					defs = append(defs, o.Defaults[task].Key)
				}
				fmt.Fprintf(c.io.out, "\nstrategies: %s\nauto picks: %s\n", strings.Join(o.Strategies, ", "), strings.Join(defs, ", "))
			})
		},
	}
}

func (c *cli) recordsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "records",
		Short: "List, read and export enrichment records",
		Example: `  enrich records list --job JOB_ID
  enrich records get RECORD_ID
  enrich records export --schema SCHEMA_ID > records.ndjson`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(c.recordsListCmd(), c.recordsGetCmd(), c.recordsExportCmd())
	return cmd
}

// recordFilter is the flags that choose records.
type recordFilter struct {
	schema, job, cursor string
	size                int
}

// bind adds the filter's --schema and --job to cmd.
func (f *recordFilter) bind(c *cli, cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.schema, "schema", "", "only records of this schema")
	cmd.Flags().StringVar(&f.job, "job", "", "only records of this job")
	_ = cmd.RegisterFlagCompletionFunc("schema", c.completeSchemas)
}

func (f *recordFilter) query() url.Values {
	q := url.Values{"type": {"enrichment"}}
	if f.schema != "" {
		q.Set("schema_id", f.schema)
	}
	if f.job != "" {
		q.Set("job_id", f.job)
	}
	if f.size > 0 {
		q.Set("page_size", strconv.Itoa(f.size))
	}
	if f.cursor != "" {
		q.Set("cursor", f.cursor)
	}
	return q
}

// recordPage is one page of GET /api/records.
type recordPage struct {
	Records []record `json:"records"`
	Next    *string  `json:"next_cursor"`
}

func (c *cli) recordsListCmd() *cobra.Command {
	var f recordFilter
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List records, newest first (one page; see --cursor)",
		Example: `  enrich records list
  enrich records list --schema SCHEMA_ID --page-size 10
  RECORD=$(enrich records list --job JOB_ID -q)`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.listRecords(cmd, f) },
	}
	f.bind(c, cmd)
	cmd.Flags().IntVar(&f.size, "page-size", 0, "records per page (server default 50, at most 200)")
	cmd.Flags().StringVar(&f.cursor, "cursor", "", "the next_cursor of the previous page")
	return cmd
}

func (c *cli) listRecords(cmd *cobra.Command, f recordFilter) error {
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodGet, "/api/records?"+f.query().Encode(), nil, &raw); err != nil {
		return err
	}
	var l recordPage
	_ = json.Unmarshal(raw, &l)
	if c.quiet {
		for _, r := range l.Records {
			fmt.Fprintln(c.io.out, r.ID)
		}
		return nil
	}
	return c.show(raw, "", func(t *tw) {
		t.row("ID", "SCHEMA", "JOB", "MODEL", "STRATEGY", "COST", "CREATED")
		for _, r := range l.Records {
			t.row(r.ID, r.SchemaID, r.JobID, r.Model, r.Strategy, r.Cost, r.Created)
		}
		if l.Next != nil {
			t.Flush()
			fmt.Fprintf(c.io.err, "more: --cursor %s\n", *l.Next)
		}
	})
}

func (c *cli) recordsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get RECORD_ID",
		Short:   "Show a record with its entity and structured output",
		Example: `  enrich records get RECORD_ID --output json`,
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, a []string) error { return c.getRecord(cmd, a[0]) },
	}
}

func (c *cli) getRecord(cmd *cobra.Command, id string) error {
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodGet, "/api/records/"+url.PathEscape(id), nil, &raw); err != nil {
		return err
	}
	var r record
	_ = json.Unmarshal(raw, &r)
	return c.show(raw, r.ID, func(t *tw) {
		t.row("ID", r.ID)
		t.row("SCHEMA", r.SchemaID)
		t.row("JOB", r.JobID)
		t.row("MODEL", r.Model)
		t.row("STRATEGY", r.Strategy)
		t.row("COST", r.Cost)
		t.row("CREATED", r.Created)
		t.fields("entity.", r.Entity)
		t.fields("output.", r.Output)
	})
}

func (c *cli) recordsExportCmd() *cobra.Command {
	var f recordFilter
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write every record in full as NDJSON, following the cursor",
		Long: `export writes one full record (with entity_data and structured_output) per
line, as NDJSON, whatever --output says, reading every page.`,
		Example: `  enrich records export > records.ndjson
  enrich records export --schema SCHEMA_ID | wc -l`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.exportRecords(cmd, f) },
	}
	f.bind(c, cmd)
	cmd.Flags().IntVar(&f.size, "page-size", 0, "records per page read (default 200, the most the server gives)")
	return cmd
}

func (c *cli) exportRecords(cmd *cobra.Command, f recordFilter) error {
	q := f.query()
	if f.size == 0 {
		q.Set("page_size", "200")
	}
	n := 0
	err := c.pages(cmd, "/api/records", q, func(raw json.RawMessage) (string, error) {
		var l recordPage
		if err := json.Unmarshal(raw, &l); err != nil {
			return "", err
		}
		for _, r := range l.Records {
			if err := c.exportRecord(cmd, r.ID); err != nil {
				return "", err
			}
			n++
		}
		if l.Next == nil {
			return "", nil
		}
		return *l.Next, nil
	})
	if err == nil && isTerminal(c.io.err) && !isTerminal(c.io.out) {
		fmt.Fprintf(c.io.err, "%d records exported\n", n)
	}
	return err
}

// exportRecord writes the record in full as one line of JSON.
func (c *cli) exportRecord(cmd *cobra.Command, id string) error {
	var full json.RawMessage
	if err := c.call(cmd, http.MethodGet, "/api/records/"+url.PathEscape(id), nil, &full); err != nil {
		return err
	}
	var x any
	if err := json.Unmarshal(full, &x); err != nil {
		return err
	}
	line, _ := json.Marshal(x)
	_, err := fmt.Fprintf(c.io.out, "%s\n", line)
	return err
}

type record struct {
	ID       string         `json:"id"`
	SchemaID string         `json:"schema_id"`
	JobID    string         `json:"job_id"`
	Model    string         `json:"model"`
	Strategy string         `json:"strategy"`
	Cost     int            `json:"cost"`
	Created  string         `json:"created_at"`
	Entity   map[string]any `json:"entity_data"`
	Output   map[string]any `json:"structured_output"`
}
