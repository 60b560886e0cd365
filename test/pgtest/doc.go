// Package pgtest gives tests a fresh PostgreSQL database: Native on the
// machine's PostgreSQL server, PGlite on a PGlite server (PostgreSQL 18 with
// pgvector, in Node.js) that the harness installs, starts and stops itself.
// Call Main from TestMain in every package that uses PGlite.
//
// Native creates a database enrich_t_<time>_<random> on the server at
// 127.0.0.1:5432 (user postgres, trust auth; ENRICH_TEST_PG_DSN names another
// server by the DSN of a database to connect to for administration) and drops
// it, with FORCE, when the test ends. An unreachable server skips the test
// with a loud reason, or fails it when ENRICH_REQUIRE_NATIVE_PG=1 (make test
// sets it when the server is up, so a broken setup is never mistaken for a
// pass).
//
// PGlite is never skipped: without node and npm the test fails and says what
// to install. The harness runs npm ci in test/pglite when its node_modules is
// missing or was installed from another package-lock.json (serialised across
// test binaries with a file lock), and starts
// `pglite-server -p PORT -e @electric-sql/pglite-pgvector:vector -m N` on a
// free loopback port. Limits of PGlite to design tests around:
//
//   - One backend session serves every connection. Session state (SET,
//     search_path, advisory locks, prepared statements) is shared by all
//     connections of a server and outlives them. Startup parameters (a DSN's
//     search_path or options) are ignored.
//   - One query at a time: queries of other connections wait while a
//     connection is inside a transaction, so tests that need parallel
//     transactions (row-lock races) must run on Native. A connection left idle
//     inside a transaction blocks the server.
//   - No LISTEN/NOTIFY between connections, no cancel requests, one database.
//   - The DSN carries default_query_exec_mode=simple_protocol: with the
//     extended protocol (exec), the Parse/Bind messages of two connections
//     can interleave on the one session ("unnamed prepared statement does
//     not exist"); a simple-protocol query is one message.
//
// So each PGlite test gets its own schema t_<random>, made the session's
// search_path with SET, on a server that no other running test uses: a server
// goes back to a pool when its test ends (its schema dropped), and a test that
// starts while every server is busy (parallel tests) gets a new server. A test
// must not RESET or DISCARD the session. Each server is a Node process,
// large and slow to start, so servers are pooled rather than started per
// test.
package pgtest
