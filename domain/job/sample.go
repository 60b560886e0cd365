package job

// The sample generation job's events (REFERENCE.md §1 "Sample generation").
const (
	EventSampleInstanceRoster     EventType = "sample_instance_roster"
	EventSampleInstanceProgress   EventType = "sample_instance_progress"
	EventSampleClarificationPause EventType = "sample_clarification_pause"
)

// SampleInstanceRoster lists the instances a sample job plans to generate.
type SampleInstanceRoster struct {
	Instances []string
}

func (SampleInstanceRoster) EventType() EventType { return EventSampleInstanceRoster }

// SampleInstanceProgress says one more sample is done; it carries the sample,
// so that a worker that takes the job over does not generate it again.
type SampleInstanceProgress struct {
	Completed, Total, Index   int
	Instance                  string
	Sample                    map[string]any
	InputTokens, OutputTokens int
	Cost                      int64
}

func (SampleInstanceProgress) EventType() EventType { return EventSampleInstanceProgress }

// SampleOption is one option of a clarification question.
type SampleOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// SampleQuestion is one clarification question of a sample job.
type SampleQuestion struct {
	ID              string         `json:"id"`
	Label           string         `json:"label"`
	Text            string         `json:"text"`
	Options         []SampleOption `json:"options"`
	AllowMultiple   bool           `json:"allow_multiple"`
	DefaultOptionID string         `json:"default_option_id,omitempty"`
}

// SampleClarificationPause pauses a sample job on open questions; POST
// /api/llm/continue/{job_id} with {answers} resumes it.
type SampleClarificationPause struct {
	EntityTitle    string
	Questions      []SampleQuestion
	Round          int
	SourceMode     string
	TimeoutSeconds int
}

func (SampleClarificationPause) EventType() EventType { return EventSampleClarificationPause }
func (SampleClarificationPause) pauses()              {}

// SamplesCompleted is the sample job's model_completed event: the samples
// (the reference's client reads them from this event, "samples" in it).
type SamplesCompleted struct {
	Model                     string
	Samples                   []map[string]any
	Requested                 int
	Note                      string
	InputTokens, OutputTokens int
	Cost, ProcessingMS        int64
	Applied                   Answers
}

func (SamplesCompleted) EventType() EventType { return EventModelCompleted }

// EventAttachmentCoherence says how a sample or schema generation's two
// or more attachments relate (REFERENCE.md "Sample generation").
const EventAttachmentCoherence EventType = "attachment_coherence"

// AttachmentFile names one attachment of the job by its index in
// attachment_ids.
type AttachmentFile struct {
	Index    int    `json:"index"`
	Filename string `json:"filename,omitempty"`
}

// AttachmentCoherence is the coherence verdict: Mode is single_entity,
// instances_of_type or incoherent (which fails the job with
// incoherent_attachments).
type AttachmentCoherence struct {
	Mode       string
	ObjectType string
	Reason     string
	Reference  *AttachmentFile
	Excluded   []AttachmentFile
	// The coherence call's spend, so that a worker that takes the job
	// over neither asks nor pays again.
	InputTokens, OutputTokens int
	Cost                      int64
}

func (AttachmentCoherence) EventType() EventType { return EventAttachmentCoherence }
