// Package jobrun is the job runtime: the ports.JobRunner that runs jobs as
// durable work across replicas. It holds the leases, fencing tokens, resume
// checkpoints and worker slots of the jobs running in this process; the
// ports.JobQueue (River on PostgreSQL, in-process on memory) dispatches
// queued jobs to it and runs its periodic sweep. The Runners of each job
// type are the app's use cases; this package imports only domain and ports.
package jobrun
