package job

import "fmt"

// Reading payloads back. A worker that takes a job over reads the events
// that an earlier worker published, and a blocking caller reads the events
// of the job it waits for, as published or as read back from the log: the
// same typed payloads either way (a batch entity's tag and a stored event's
// raw form looked through). A reader given an event of another payload is
// an error.

func read[T Payload](e Event) (T, error) {
	p, ok := PayloadOf[T](e)
	if !ok {
		return p, fmt.Errorf("job: event %d of job %s (%s) is not a %T", e.Seq, e.JobID, e.Type, p)
	}
	return p, nil
}

// ReadExpertiseCompleted reads an expertise_completed event.
func ReadExpertiseCompleted(e Event) (ExpertiseCompleted, error) { return read[ExpertiseCompleted](e) }

// ReadModelCompleted reads an enrichment's model_completed event.
func ReadModelCompleted(e Event) (ModelCompleted, error) { return read[ModelCompleted](e) }

// ReadSamplesCompleted reads a sample job's model_completed event.
func ReadSamplesCompleted(e Event) (SamplesCompleted, error) { return read[SamplesCompleted](e) }

// ReadEntityCompleted reads a batch's entity_completed event.
func ReadEntityCompleted(e Event) (EntityCompleted, error) { return read[EntityCompleted](e) }

// ReadArbitrationCompleted reads a fusion's arbitration_completed event.
func ReadArbitrationCompleted(e Event) (ArbitrationCompleted, error) {
	return read[ArbitrationCompleted](e)
}

// ReadSampleInstanceProgress reads a sample_instance_progress event.
func ReadSampleInstanceProgress(e Event) (SampleInstanceProgress, error) {
	return read[SampleInstanceProgress](e)
}

// ReadSampleClarificationPause reads a sample clarification pause.
func ReadSampleClarificationPause(e Event) (SampleClarificationPause, error) {
	return read[SampleClarificationPause](e)
}

// ModelCompletedOf reads an enrichment's model_completed event as far as
// its readers take it: no breakdown; the result and record of a success,
// the error of a failure.
func ModelCompletedOf(e Event) (ModelCompleted, error) {
	p, err := read[ModelCompleted](e)
	if err != nil {
		return p, err
	}
	p.Breakdown = nil
	if p.Success {
		p.ErrorMessage, p.ErrorCode = "", ""
	} else {
		p.Result, p.RecordID = nil, ""
	}
	return p, nil
}

// CompletedOf reads a completed event as far as its readers take it: the
// failed models of a several-model run, the fusion of a fused one.
func CompletedOf(e Event) (JobCompleted, error) {
	p, err := read[JobCompleted](e)
	if err != nil {
		return p, err
	}
	if !p.Several {
		p.FailedModels = nil
	}
	p.Several, p.Results = false, nil
	if !p.Fused {
		p.Fusion, p.SourceModels = nil, nil
	}
	return p, nil
}

// Ended is how a terminal event (completed, failed, cancelled) says the job
// ended.
type Ended struct {
	State   State
	Code    ErrorCode
	Message string
	Reason  string
}

// EndedOf reads how a terminal event says the job ended.
func EndedOf(e Event) (Ended, error) {
	switch p := Inner(e.Payload).(type) {
	case JobCompleted:
		return Ended{State: Completed}, nil
	case JobFailed:
		return Ended{State: Failed, Code: p.Code, Message: p.Msg}, nil
	case JobCancelled:
		return Ended{State: Cancelled, Reason: p.Reason}, nil
	}
	return Ended{}, fmt.Errorf("job: event %d of job %s (%s) is not a terminal event", e.Seq, e.JobID, e.Type)
}
