#!/usr/bin/env bash
# Prepares what `make test` needs: the native PostgreSQL at 127.0.0.1:5432 when
# it is installed (started with pg_ctlcluster if it is down), and the PGlite
# server's npm packages. A machine without PostgreSQL still runs the Postgres
# suites on PGlite.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "test-deps: native PostgreSQL is up"
elif command -v pg_ctlcluster >/dev/null 2>&1 && ls /etc/postgresql >/dev/null 2>&1; then
  for v in $(ls /etc/postgresql); do
    echo "test-deps: starting PostgreSQL $v"
    pg_ctlcluster --skip-systemctl-redirect "$v" main start || true
  done
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    echo "test-deps: PostgreSQL did not come up; native suites will skip, PGlite suites still run"
  fi
else
  echo "test-deps: no native PostgreSQL here; the Postgres suites run on PGlite only"
fi
if [ -z "${ENRICH_TEST_PG_DSN:-}" ] && pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE test" >/dev/null || true
fi

if [ -f test/pglite/package.json ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "test-deps: npm is required for the PGlite server" >&2
    exit 1
  fi
  if [ ! -d test/pglite/node_modules ]; then
    echo "test-deps: installing the PGlite server (npm ci)"
    (cd test/pglite && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
