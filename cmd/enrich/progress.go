package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
)

// progressView draws a job's progress on a terminal: one bar over every
// (model, expertise domain) pair, described by what runs now (the model, the
// domain, the attempt and a retry's reason), with a line above it for each
// domain done, retry, error and resume, which stays on the screen.
type progressView struct {
	w     io.Writer
	width int

	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	total  int
	done   int
	paused bool
	held   []string          // lines printed while paused
	names  map[string]string // expertise key -> name
	tries  map[string]int    // model/expertise -> attempts
}

func newProgressView(w io.Writer) *progressView {
	width := 80
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			width = cols
		}
	}
	return &progressView{w: w, width: width, names: map[string]string{}, tries: map[string]int{}}
}

// barWidth is the bar's own width, in cells.
const barWidth = 20

// Event updates the view with one event of the job.
func (v *progressView) Event(e api.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	model := e.Str("model")
	switch e.Name {
	case "model_auto_selected":
		v.line(fmt.Sprintf("auto picked %s", model))
	case "strategy_selected":
		v.line(fmt.Sprintf("strategy %s", e.Str("strategy")))
	case "model_started":
		v.total += e.Int("total_expertises")
		if v.bar == nil || v.bar.IsFinished() {
			// A model that starts after the others finished their domains
			// needs a bar again: a finished one does not draw.
			v.newBar(model + " started")
			v.bar.ChangeMax(max(v.total, 1))
			_ = v.bar.Set(v.done)
		} else {
			v.describe(model + " started")
			v.bar.ChangeMax(max(v.total, 1))
		}
	case "job_resumed":
		v.line(fmt.Sprintf("↺ job resumed on another worker (attempt %d)", e.Int("attempt")))
	case "expertise_started":
		v.names[e.Str("expertise_key")] = e.Str("expertise_name")
		v.describe(fmt.Sprintf("%s · %s", model, v.expertise(e)))
	case "attempt":
		k := model + "/" + e.Str("expertise")
		n, of := e.Int("attempt"), e.Int("max_attempts")
		v.tries[k] = n
		desc := fmt.Sprintf("%s · %s · attempt %d/%d", model, v.expertise(e), n, of)
		r := e.Str("reason")
		if r != "" {
			desc += " ↻ retry"
		}
		v.describe(desc)
		if r != "" {
			v.line(fmt.Sprintf("↻ %s · %s: retry %d/%d: %s", model, v.expertise(e), n, of, oneLine(r)))
		}
	case "expertise_completed":
		v.done++
		if v.bar != nil {
			_ = v.bar.Set(min(v.done, v.total))
		}
		k := model + "/" + e.Str("expertise_key")
		tries := ""
		if n := v.tries[k]; n > 1 {
			tries = fmt.Sprintf(" after %d attempts", n)
		}
		v.describe(fmt.Sprintf("%s · %s done", model, v.expertise(e)))
		if ok, _ := e.Data["success"].(bool); ok {
			v.line(fmt.Sprintf("✓ %s · %s%s", model, v.expertise(e), tries))
		} else {
			v.line(fmt.Sprintf("✗ %s · %s%s: %s", model, v.expertise(e), tries, errorText(e)))
		}
	case "model_completed":
		if ok, _ := e.Data["success"].(bool); ok {
			v.line(fmt.Sprintf("● %s done: cost %d µcredits", model, e.Int("cost")))
		} else {
			v.line(fmt.Sprintf("✗ %s failed: %s", model, errorText(e)))
		}
	case "error":
		v.line("✗ " + errorText(e))
	case "completed", "failed", "cancelled":
		v.finish()
	}
}

// Pause stops drawing (while a question is asked); Resume draws again.
func (v *progressView) Pause() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bar != nil {
		_ = v.bar.Clear()
	}
	v.paused = true
}

func (v *progressView) Resume() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.paused = false
	held := v.held
	v.held = nil
	for _, l := range held {
		v.line(l)
	}
	if v.bar != nil && !v.bar.IsFinished() {
		_ = v.bar.RenderBlank()
	}
}

func (v *progressView) newBar(desc string) {
	v.bar = progressbar.NewOptions(1,
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWriter(v.w),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionSetWidth(barWidth),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionThrottle(0),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetTheme(progressbar.Theme{Saucer: "█", SaucerPadding: "░", BarStart: "", BarEnd: ""}),
	)
}

// describe sets the bar's text, cut to the terminal's width.
func (v *progressView) describe(s string) {
	if v.bar == nil || v.paused {
		return
	}
	room := v.width - barWidth - 20 // percentage, count and margins
	if utf8.RuneCountInString(s) > room && room > 1 {
		s = string([]rune(s)[:room-1]) + "…"
	}
	v.bar.Describe(s)
}

// line prints s above the bar.
func (v *progressView) line(s string) {
	if v.paused {
		v.held = append(v.held, s)
		return
	}
	if v.bar != nil {
		_ = v.bar.Clear()
	}
	fmt.Fprintln(v.w, s)
	if v.bar != nil && !v.bar.IsFinished() {
		_ = v.bar.RenderBlank()
	}
}

func (v *progressView) finish() {
	if v.bar != nil {
		_ = v.bar.Clear()
		_ = v.bar.Exit()
	}
}

func (v *progressView) expertise(e api.Event) string {
	k := e.Str("expertise_key")
	if k == "" {
		k = e.Str("expertise")
	}
	if n := e.Str("expertise_name"); n != "" {
		return n
	}
	if n := v.names[k]; n != "" {
		return n
	}
	return k
}

func errorText(e api.Event) string {
	msg := oneLine(e.Str("error_message"))
	if code := e.Str("error_code"); code != "" {
		msg += " (" + code + ")"
	}
	return strings.TrimSpace(msg)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:119] + "…"
	}
	return s
}
