#!/usr/bin/env node
// The PGlite server of the test harness (test/pgtest): pglite-socket's
// server with pgvector, plus PostgreSQL settings given as -c name=value,
// which pglite-server cannot pass (PGlite's postgresqlconf option). The
// concept bench sizes shared_buffers this way so that its HNSW index is
// read from PostgreSQL's buffers, as an operator would size it.
import { parseArgs } from 'node:util'
import { PGlite } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

const { values } = parseArgs({
  options: {
    port: { type: 'string', short: 'p', default: '5432' },
    host: { type: 'string', short: 'h', default: '127.0.0.1' },
    'max-connections': { type: 'string', short: 'm', default: '1' },
    conf: { type: 'string', short: 'c', multiple: true, default: [] },
  },
})

const db = new PGlite('memory://', { extensions: { vector }, postgresqlconf: values.conf })
await db.waitReady
const server = new PGLiteSocketServer({
  db,
  port: parseInt(values.port, 10),
  host: values.host,
  maxConnections: parseInt(values['max-connections'], 10),
})
server.addEventListener('listening', (e) => console.log(`PGLiteSocketServer listening on ${JSON.stringify(e.detail)}`))
server.addEventListener('error', (e) => console.error('Socket server error:', e.detail))
const stop = async () => {
  await server.stop()
  await db.close()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
await server.start()
