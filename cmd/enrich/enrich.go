package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

// enrichFlags are the enrich command's flags.
type enrichFlags struct {
	data, file string
	models     []string
	strategy   string
	follow     bool
	events     bool
	attach     []string
}

func (c *cli) enrichCmd() *cobra.Command {
	var f enrichFlags
	cmd := &cobra.Command{
		Use:   "enrich SCHEMA_ID (-d JSON | -f FILE)",
		Short: "Enrich an entity against a saved schema, with live progress",
		Long: `enrich starts an enrichment job for one entity (its known attributes, a JSON
object) against a saved schema, follows the job's event stream and prints the
result and its record id.

On a terminal a progress bar runs over the expertise domains of every model,
showing the domain and attempt in progress; retries, finished domains and
errors stay on the screen above it. --events prints every event as one JSON
line instead. --follow=false only starts the job and prints its id.

Ctrl-C asks whether to cancel the job or leave it running (answer y to
cancel). Without a terminal to ask on, Ctrl-C leaves the job running, prints
its id and exits with 130: the job is durable work, and 'enrich jobs cancel'
or 'enrich jobs follow' take it from there.

--attach FILE (repeatable) uploads files first and grounds the job in them.

Exit code 1 when the job fails or is cancelled.`,
		Example: `  enrich enrich SCHEMA_ID -d '{"name":"Acme"}'
  enrich enrich SCHEMA_ID -f entity.json --model sandbox::flaky --strategy multi_expertise
  RECORD=$(enrich enrich SCHEMA_ID -d '{"name":"Acme"}' -q)     # the record id alone
  JOB=$(enrich enrich SCHEMA_ID -d '{"name":"Acme"}' --follow=false -q)
  enrich enrich SCHEMA_ID -d '{"name":"Acme"}' --events | grep attempt
  enrich enrich SCHEMA_ID -d '{"name":"Acme"}' --attach annual-report.pdf`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: c.completeSchemas,
		RunE: func(cmd *cobra.Command, a []string) error {
			entity, err := c.readJSONArg(f.data, f.file, "the entity")
			if err != nil {
				return err
			}
			return c.startEnrichment(cmd, a[0], entity, f)
		},
	}
	c.enrichFlags(cmd, &f)
	return cmd
}

// enrichFlags defines the enrich command's flags on cmd (also on the root,
// for the shortcut "enrich SCHEMA_ID -d JSON").
func (c *cli) enrichFlags(cmd *cobra.Command, f *enrichFlags) {
	fl := cmd.Flags()
	fl.StringVarP(&f.data, "data", "d", "", "the entity's known attributes, a JSON object")
	fl.StringVarP(&f.file, "file", "f", "", "a file holding the entity's JSON (- for standard input)")
	fl.StringSliceVarP(&f.models, "model", "m", nil, "model key, repeatable or comma-separated (default: the server's auto choice)")
	fl.StringVar(&f.strategy, "strategy", "", "auto, multi_expertise, single_pass or expert_domains (default auto)")
	fl.BoolVar(&f.follow, "follow", true, "follow the job to its end (false: print the job id and return)")
	fl.BoolVar(&f.events, "events", false, "print every event as a JSON line (NDJSON) instead of progress and result")
	attachFlag(cmd, &f.attach, "the job")
	_ = cmd.MarkFlagFilename("file", "json")
	_ = cmd.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions([]string{"auto", "multi_expertise", "single_pass", "expert_domains"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("model", c.completeModels)
}

// shortcut lets the root run "enrich SCHEMA_ID -d JSON" as "enrich enrich
// SCHEMA_ID -d JSON". Only with -d or -f: without them an unknown first word
// stays an unknown command (a typo is not a schema id).
func (c *cli) shortcut(root *cobra.Command) {
	var f enrichFlags
	c.enrichFlags(root, &f)
	root.Flags().VisitAll(func(fl *pflag.Flag) { fl.Hidden = true })
	root.SuggestionsMinimumDistance = 2
	root.Args = func(cmd *cobra.Command, a []string) error {
		if len(a) == 0 {
			return nil
		}
		if f.data == "" && f.file == "" {
			msg := fmt.Sprintf("unknown command %q for %q", a[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(a[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
			return usageError{errors.New(msg)}
		}
		return args(cobra.ExactArgs(1))(cmd, a)
	}
	root.RunE = func(cmd *cobra.Command, a []string) error {
		if len(a) == 0 {
			return cmd.Help()
		}
		entity, err := c.readJSONArg(f.data, f.file, "the entity")
		if err != nil {
			return err
		}
		return c.startEnrichment(cmd, a[0], entity, f)
	}
}

func (c *cli) startEnrichment(cmd *cobra.Command, schemaID string, entity json.RawMessage, f enrichFlags) error {
	body := map[string]any{"schema_id": schemaID, "entity_data": entity}
	if err := c.attachTo(cmd, body, f.attach); err != nil {
		return err
	}
	if len(f.models) > 0 {
		body["models"] = f.models
	}
	if f.strategy != "" {
		body["strategy"] = f.strategy
	}
	return c.startJob(cmd, "/api/single/enrich/stream", body, f.follow, f.events)
}

// startJob posts a job's request to route, then follows the job (or, not
// following, prints its id).
func (c *cli) startJob(cmd *cobra.Command, route string, body map[string]any, follow, events bool) error {
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodPost, route, body, &raw); err != nil {
		return err
	}
	var started struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(raw, &started); err != nil || started.JobID == "" {
		return fmt.Errorf("the server did not answer a job id: %s", raw)
	}
	if !follow {
		return c.show(raw, started.JobID, func(t *tw) {
			t.row("JOB", started.JobID)
			t.Flush()
			fmt.Fprintf(c.io.err, "Started. Follow it with: enrich jobs follow %s\n", started.JobID)
		})
	}
	return c.follow(cmd, started.JobID, events)
}

func (c *cli) jobsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Follow, cancel or continue a job",
		Example: `  enrich jobs follow JOB_ID
  enrich jobs cancel JOB_ID`,
		Args: args(cobra.NoArgs),
	}
	var events bool
	follow := &cobra.Command{
		Use:   "follow JOB_ID",
		Short: "Follow a job's events to its end and print its result",
		Long: `follow replays a job's events from the start (a finished job's too) and
follows it live to its end, like enrich: progress on a terminal, then the
result. Ctrl-C asks whether to cancel the job.`,
		Example: `  enrich jobs follow JOB_ID
  enrich jobs follow JOB_ID --events > events.ndjson`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error { return c.follow(cmd, a[0], events) },
	}
	follow.Flags().BoolVar(&events, "events", false, "print every event as a JSON line (NDJSON) instead of progress and result")
	cancel := &cobra.Command{
		Use:     "cancel JOB_ID",
		Short:   "Cancel a pending, running or paused job",
		Example: `  enrich jobs cancel JOB_ID`,
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, a []string) error { return c.jobAction(cmd, "cancel", a[0]) },
	}
	cont := &cobra.Command{
		Use:     "continue JOB_ID",
		Short:   "Resume a paused job",
		Example: `  enrich jobs continue JOB_ID && enrich jobs follow JOB_ID`,
		Args:    args(cobra.ExactArgs(1)),
		RunE:    func(cmd *cobra.Command, a []string) error { return c.jobAction(cmd, "continue", a[0]) },
	}
	cmd.AddCommand(follow, cancel, cont)
	return cmd
}

func (c *cli) jobAction(cmd *cobra.Command, action, job string) error {
	var raw json.RawMessage
	if err := c.call(cmd, http.MethodPost, "/api/llm/"+action+"/"+url.PathEscape(job), nil, &raw); err != nil {
		return err
	}
	var st struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(raw, &st)
	return c.show(raw, job, func(t *tw) {
		t.row("JOB", "STATUS")
		t.row(job, st.Status)
	})
}

// follow reads a job's stream to its end: progress on a terminal (or every
// event as NDJSON with events), then the outcome. Ctrl-C asks whether to
// cancel the job; without a terminal it leaves the job running.
func (c *cli) follow(cmd *cobra.Command, job string, events bool) error {
	cl, err := c.api()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()

	intr := c.claimInterrupts()
	defer c.releaseInterrupts()
	f := &follower{c: c, cl: cl, stop: stop, job: job, events: events, tty: isTerminal(c.io.err)}
	if f.tty && !events && !c.quiet {
		f.view = newProgressView(c.io.err)
	}
	// The id goes to standard error even without a terminal: logs of a
	// script that is stopped keep the id of the job that goes on.
	fmt.Fprintf(c.io.err, "job %s\n", job)
	evs, done := f.stream(ctx)
	for {
		var err error
		select {
		case e, ok := <-evs:
			if !ok {
				return f.end(<-done)
			}
			err = f.event(e)
		case <-intr:
			err = f.interrupt()
		case a := <-f.answers:
			err = f.answer(ctx, a)
		}
		if err != nil {
			return err
		}
	}
}

// follower is the state of one follow.
type follower struct {
	c      *cli
	cl     *api.Client
	stop   context.CancelFunc // stops reading the stream
	job    string
	events bool
	tty    bool
	view   *progressView // nil: no progress shown

	answers   chan string // the answer to "Cancel job?" while it is asked
	last      api.Event
	cancelled bool // a cancel was asked for
}

// stream reads the job's events into a channel that closes at the stream's
// end; done then holds how it ended.
func (f *follower) stream(ctx context.Context) (<-chan api.Event, <-chan error) {
	evs := make(chan api.Event, 64)
	done := make(chan error, 1)
	go func() {
		done <- f.cl.Follow(ctx, f.job, "", func(e api.Event) error {
			select {
			case evs <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		close(evs)
	}()
	return evs, done
}

func (f *follower) event(e api.Event) error {
	f.last = e
	if f.events {
		if _, err := fmt.Fprintf(f.c.io.out, "%s\n", compact(e.Raw)); err != nil {
			return err
		}
	}
	if f.view != nil {
		f.view.Event(e)
	}
	return nil
}

// end reports the job's outcome once its stream has ended with err.
func (f *follower) end(err error) error {
	if err != nil {
		return err
	}
	if f.answers != nil {
		fmt.Fprintln(f.c.io.err, "\nThe job ended meanwhile.")
	}
	return f.c.outcome(f.job, f.last, f.events)
}

// interrupt handles a Ctrl-C: the first on a terminal asks whether to
// cancel the job; any other stops following and leaves the job as it is.
func (f *follower) interrupt() error {
	if f.cancelled {
		f.stop()
		return fmt.Errorf("job %s: cancel requested; stopped waiting for its end", f.job)
	}
	if f.answers != nil {
		// A second Ctrl-C while asking: leave the job running.
		f.stop()
		return interrupted{f.job}
	}
	if f.view != nil {
		f.view.Pause()
	}
	if !f.tty || !isTerminal(f.c.io.in) {
		f.stop()
		return interrupted{f.job}
	}
	fmt.Fprintf(f.c.io.err, "\nCancel job %s? [y/N] (N leaves it running) ", f.job)
	f.answers = make(chan string, 1)
	go func(ch chan<- string) {
		line, _ := bufio.NewReader(f.c.io.in).ReadString('\n')
		ch <- strings.ToLower(strings.TrimSpace(line))
	}(f.answers)
	return nil
}

// answer acts on the answer to "Cancel job?": yes cancels the job and
// follows it to its end; anything else leaves it running.
func (f *follower) answer(ctx context.Context, a string) error {
	f.answers = nil
	if a != "y" && a != "yes" {
		f.stop()
		return interrupted{f.job}
	}
	f.cancelled = true
	err := f.cl.Do(ctx, http.MethodPost, "/api/llm/cancel/"+url.PathEscape(f.job), nil, nil)
	var ae *api.Error
	switch {
	case err == nil:
		fmt.Fprintln(f.c.io.err, "Cancelling…")
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		fmt.Fprintln(f.c.io.err, "The job had already ended.")
	default:
		return fmt.Errorf("cancel job %s: %w", f.job, err)
	}
	if f.view != nil {
		f.view.Resume()
	}
	return nil
}

// outcome prints a finished job's result and turns failure into an error.
func (c *cli) outcome(job string, e api.Event, events bool) error {
	switch e.Name {
	case "failed":
		if !events && !c.table() && !c.quiet {
			_ = c.printJSON(e.Raw)
		}
		return jobError{job: job, state: "failed", code: e.Str("error_code"), detail: e.Str("error_message")}
	case "cancelled":
		if !events && !c.table() && !c.quiet {
			_ = c.printJSON(e.Raw)
		}
		return jobError{job: job, state: "cancelled", detail: e.Str("reason")}
	case "completed":
	default:
		return api.ErrStreamEnded
	}
	if events {
		return nil
	}
	var ids []string
	if list, ok := e.Data["record_ids"].([]any); ok {
		for _, id := range list {
			if s, ok := id.(string); ok {
				ids = append(ids, s)
			}
		}
	}
	if len(ids) == 0 && e.Str("record_id") != "" {
		ids = []string{e.Str("record_id")}
	}
	switch {
	case c.quiet:
		for _, id := range ids {
			fmt.Fprintln(c.io.out, id)
		}
		return nil
	case !c.table():
		return c.printJSON(e.Raw)
	}
	t := newTW(c.io.out)
	result, _ := e.Data["result"].(map[string]any)
	t.fields("", result)
	t.Flush()
	fmt.Fprintf(c.io.out, "\nrecord %s · cost %d µcredits\n", strings.Join(ids, ", "), e.Int("cost"))
	if failed, ok := e.Data["failed_models"].([]any); ok && len(failed) > 0 {
		var names []string
		for _, f := range failed {
			names = append(names, fmt.Sprint(f))
		}
		sort.Strings(names)
		fmt.Fprintf(c.io.out, "failed models: %s\n", strings.Join(names, ", "))
	}
	return nil
}

func compact(raw json.RawMessage) string {
	var b strings.Builder
	var x any
	if json.Unmarshal(raw, &x) != nil {
		return string(raw)
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(x)
	return strings.TrimSpace(b.String())
}

func (c *cli) completeModels(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var o struct {
		Models []struct {
			Key  string `json:"key"`
			Name string `json:"display_name"`
		} `json:"models"`
	}
	if c.call(cmd, http.MethodGet, "/api/enrichment/options", nil, &o) != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, m := range o.Models {
		out = append(out, m.Key+"\t"+m.Name)
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// claimInterrupts routes SIGINT to the caller until releaseInterrupts.
func (c *cli) claimInterrupts() <-chan os.Signal {
	ch := make(chan os.Signal, 2)
	c.intr.Store(&ch)
	return ch
}

func (c *cli) releaseInterrupts() { c.intr.Store(nil) }
