// Package metrics exports the service's Prometheus metrics: HTTP latency by
// route and status, jobs by state, and LLM calls (latency, tokens, errors)
// by provider and model. It decorates the LLM port and observes the engine
// and the HTTP API through their small observer interfaces.
package metrics
