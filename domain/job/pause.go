package job

import "fmt"

// EventJobContinued is written by POST /api/llm/continue in the commit that
// moves a paused job back to running: it carries the answers, so that the
// worker that resumes the job reads them from the job's own log.
const EventJobContinued EventType = "job_continued"

// Answer is the answer to one question of a pause: chosen options and/or
// free text.
type Answer struct {
	OptionIDs []string `json:"option_ids,omitempty"`
	Text      string   `json:"text,omitempty"`
}

// Answers are a continue's answers, by question id.
type Answers map[string]Answer

// Limits on a continue's answers.
const (
	MaxAnswers       = 50
	MaxAnswerOptions = 20
	MaxAnswerText    = 2000
)

// Check validates answers against the limits; the error names the question.
func (a Answers) Check() error {
	if len(a) > MaxAnswers {
		return fmt.Errorf("at most %d answers", MaxAnswers)
	}
	for id, ans := range a {
		switch {
		case id == "" || len(id) > 200:
			return fmt.Errorf("answers: a question id must have 1 to 200 characters")
		case len(ans.OptionIDs) > MaxAnswerOptions:
			return fmt.Errorf("answers.%s.option_ids: at most %d options", id, MaxAnswerOptions)
		case len(ans.Text) > MaxAnswerText:
			return fmt.Errorf("answers.%s.text: at most %d bytes", id, MaxAnswerText)
		}
	}
	return nil
}

// JobContinued says a client continued a paused job, with its answers.
type JobContinued struct {
	Answers Answers
	// Round is the number of pauses continued so far, this one included.
	Round int
}

func (JobContinued) EventType() EventType { return EventJobContinued }

// LastContinue returns the answers of the last job_continued event of a
// job's events, and whether there is one.
func LastContinue(evs []Event) (Answers, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != EventJobContinued {
			continue
		}
		p, _ := PayloadOf[JobContinued](evs[i])
		if p.Answers == nil {
			p.Answers = Answers{}
		}
		return p.Answers, true
	}
	return nil, false
}
