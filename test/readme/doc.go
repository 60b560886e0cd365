// Package readme holds the test that keeps README.md true for a stranger:
// it runs the walk-throughs marked in README.md, as written, twice against a
// started server, and checks the rules the README keeps (no links out of
// the repository, no placeholders, no DSN naming the test database).
package readme
