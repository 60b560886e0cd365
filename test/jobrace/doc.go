// Package jobrace races a job's pause against its continue, on memory and
// on native PostgreSQL (issue 27, finding 3): every job must end. Its tests
// drive the job runtime (adapters/jobrun) directly, with a queue wrapper
// that can force the interleaving that used to leave a continued job
// running with nobody holding it. ENRICH_LOAD=1 runs ten times the cycles.
package jobrace
