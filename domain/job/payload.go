package job

// Payload is the typed body of one event type. Its wire form (the keys of
// the SSE data line beside "event" and "job_id", and of the stored event) is
// the codec's (ports.EventCodec), which writes exactly what clients read,
// absent keys included.
type Payload interface {
	EventType() EventType
}

// PausePayload is the payload of an event that pauses its job: the job's
// status is paused as of the event. Only this package's pause events are
// ones.
type PausePayload interface {
	Payload
	pauses()
}

// StatusOf is the job's status as of an event of payload p: its state for
// the terminal events, paused for a pause, running for every other.
func StatusOf(p Payload) State {
	switch Inner(p).(type) {
	case JobCompleted:
		return Completed
	case JobFailed:
		return Failed
	case JobCancelled:
		return Cancelled
	case PausePayload:
		return Paused
	}
	return Running
}

// Raw is the payload of an event read from a log that this version cannot
// give back in a form of its own: one of a type it does not know (written
// by another version), or one whose stored data its typed form would not
// write back as it is (an earlier version's shape). Data is the event's
// data as stored (nil: none), and the event is served from it as it is.
// Typed is what this version reads of it (nil for an unknown type): the
// readers take that.
type Raw struct {
	Type  EventType
	Data  []byte
	Typed Payload
}

func (r Raw) EventType() EventType { return r.Type }

// Inner is the payload p stands for: the one an InEntity tags or a Raw
// reads, else p itself (nil for a Raw of a type this version does not know).
func Inner(p Payload) Payload {
	for {
		switch x := p.(type) {
		case InEntity:
			p = x.Payload
		case Raw:
			p = x.Typed
		default:
			return p
		}
	}
}

// PayloadOf returns e's payload when it is a T (through a batch entity's
// tag and a stored event's raw form).
func PayloadOf[T Payload](e Event) (T, bool) {
	p, ok := Inner(e.Payload).(T)
	return p, ok
}

// StrategySelected says which strategy the server chose for "auto".
type StrategySelected struct {
	Strategy, Requested, Reason string
	Signals                     any
}

func (StrategySelected) EventType() EventType { return EventStrategySelected }

// ModelAutoSelected says which model the server chose.
type ModelAutoSelected struct {
	Model, TaskType, Source string
	Pinned                  bool
}

func (ModelAutoSelected) EventType() EventType { return EventModelAutoSelected }

// ModelStarted opens one model's run.
type ModelStarted struct {
	Model, Strategy         string
	EntityIndex, Expertises int
	Sandbox                 bool
}

func (ModelStarted) EventType() EventType { return EventModelStarted }

// ExpertiseStarted opens one expertise call of a model.
type ExpertiseStarted struct {
	Model, Key, Name string
}

func (ExpertiseStarted) EventType() EventType { return EventExpertiseStarted }

// Attempt is one try of an expertise call; Reason says why a retry happens
// (a first attempt has none).
type Attempt struct {
	Model, Expertise, Reason string
	Attempt, MaxAttempts     int
}

func (Attempt) EventType() EventType { return EventAttempt }

// ProviderQueued says an expertise call waits for a free slot of its
// provider before it goes out.
type ProviderQueued struct {
	Model, Expertise, Provider string
}

func (ProviderQueued) EventType() EventType { return EventProviderQueued }

// ExpertiseCompleted closes one expertise call, with its partial result or
// its error. A resumed run reuses the partial result and its usage.
type ExpertiseCompleted struct {
	Model, Key, Name          string
	Completed, Total          int
	Success                   bool
	PartialResult             map[string]any
	InputTokens, OutputTokens int
	Cost, ProcessingMS        int64
	ErrorMessage              string
	ErrorCode                 ErrorCode
	// KeySource is whose provider key paid: organization or global (empty
	// for a provider that needs no key).
	KeySource string
	// WebSearchCalls counts the call's web-search tool calls; it is written
	// only when there were some, so events without searches keep their
	// earlier shape.
	WebSearchCalls int
}

func (ExpertiseCompleted) EventType() EventType { return EventExpertiseCompleted }

// Breakdown is one expertise's share of a model's run.
type Breakdown struct {
	Key, Name string
	Success   bool
	Tokens    int
	Cost      int64
}

// ModelCompleted closes one model's run, with its result and record or its
// error.
type ModelCompleted struct {
	Model   string
	Success bool
	// PartialSuccess: some of the model's expertises succeeded, others
	// failed (the model then fails: a partial result is not stored).
	PartialSuccess            bool
	Cost, ProcessingMS        int64
	InputTokens, OutputTokens int
	Breakdown                 []Breakdown
	Result                    map[string]any
	RecordID                  string
	ErrorMessage              string
	ErrorCode                 ErrorCode
}

func (ModelCompleted) EventType() EventType { return EventModelCompleted }

// SomeModelsFailed is the error event before completed when some of several
// models failed.
type SomeModelsFailed struct {
	Message      string
	FailedModels []string
}

func (SomeModelsFailed) EventType() EventType { return EventError }

// JobCompleted ends a job that succeeded. Several-model runs also carry
// every model's result and the failed models.
type JobCompleted struct {
	Result       map[string]any
	RecordID     string
	RecordIDs    []string
	Cost         int64
	Several      bool
	Results      map[string]any
	FailedModels []string
	// Fused: Result and RecordID are the fused record's; Fusion is its
	// summary (a fusion.Summary; a map when read from a log) and
	// SourceModels the merged models.
	Fused        bool
	Fusion       any
	SourceModels []string
}

func (JobCompleted) EventType() EventType { return EventCompleted }

// JobError is the error event that precedes failed.
type JobError struct {
	Code ErrorCode
	Msg  string
}

func (JobError) EventType() EventType { return EventError }

// JobFailed ends a job that failed.
type JobFailed struct {
	Code ErrorCode
	Msg  string
}

func (JobFailed) EventType() EventType { return EventFailed }

// JobCancelled ends a cancelled job. A run cancelled with results worth
// keeping (Partial: a batch's finished entities) carries them in Result.
type JobCancelled struct {
	Reason  string
	Partial bool
	Result  map[string]any
}

func (JobCancelled) EventType() EventType { return EventCancelled }

// JobResumed opens the events of a worker that took a job over.
type JobResumed struct {
	Attempt    int
	AfterEvent int64
}

func (JobResumed) EventType() EventType { return EventJobResumed }
