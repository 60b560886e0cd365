// Package ports holds the interfaces that the app services call (repositories,
// the LLM, the event log, the job runner, clock and ids) and the sentinel
// errors shared by every adapter. Adapters translate their driver errors into
// these sentinels so that the core never sees SQL or HTTP.
package ports
