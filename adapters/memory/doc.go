// Package memory holds in-memory implementations of the repository ports:
// the default storage of an embedded or development server, and the fakes
// that app tests run on. They pass the same contract suites (test/contract)
// as the PostgreSQL adapter, keep nothing across restarts, and are safe for
// concurrent use. Every method copies what it stores and what it returns, so
// a caller cannot change stored state except through the ports.
package memory
