package app

// JobRequests encodes and decodes each job kind's stored request: the job
// row's request, the source of truth that a worker taking the job over plans
// again from. The format (JSON today, kept byte for byte) is the adapter's
// (adapters/jobcodec); the app's request types carry no tags.
type JobRequests interface {
	EncodeEnrich(EnrichRequest) ([]byte, error)
	DecodeEnrich([]byte) (EnrichRequest, error)
	EncodeBatch(BatchRequest) ([]byte, error)
	DecodeBatch([]byte) (BatchRequest, error)
	EncodeMerge(MergeRequest) ([]byte, error)
	DecodeMerge([]byte) (MergeRequest, error)
	EncodeGenerate(GenerateRequest) ([]byte, error)
	DecodeGenerate([]byte) (GenerateRequest, error)
	EncodeEdit(EditRequest) ([]byte, error)
	DecodeEdit([]byte) (EditRequest, error)
	EncodeSample(SampleRequest) ([]byte, error)
	DecodeSample([]byte) (SampleRequest, error)
}
