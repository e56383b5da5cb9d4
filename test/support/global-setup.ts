import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import pg from "pg"
import type { TestProject } from "vitest/node"
import { startEmbeddedPostgres } from "../../src/platform/embedded-postgres.js"
import { type BrowserResolution, resolveBrowserBinary } from "./chromium-path.js"
import { TEMPLATE_DB, prepareTemplate } from "./template.js"
import { makeTestTls, type TestTls } from "./test-ca.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** A server URL (any database) under which each test file creates its own database. */
    serverUrl: string
    templateDb: string
    browserBinary: BrowserResolution
    /** The run's test CA (trusted through NODE_EXTRA_CA_CERTS) and a server certificate it signed. */
    testTls: TestTls
  }
}

/**
 * One Postgres per run (embedded, or TEST_DATABASE_URL), one template database with every
 * migration applied; each test file clones it (CREATE DATABASE ... TEMPLATE), so files
 * are isolated and the suite stays fast on two cores.
 */
export default async function setup(project: TestProject) {
  // Before any worker process starts: Node reads NODE_EXTRA_CA_CERTS once, at process start. What the
  // machine already trusts there stays trusted (the registry may be reached through a proxy's CA).
  const tls = await makeTestTls(process.env["NODE_EXTRA_CA_CERTS"])
  process.env["NODE_EXTRA_CA_CERTS"] = tls.caFile
  project.provide("testTls", tls)
  let serverUrl = process.env["TEST_DATABASE_URL"]
  let stop: (() => Promise<void>) | undefined
  let dir: string | undefined
  if (!serverUrl) {
    dir = mkdtempSync(join(tmpdir(), "authservice-test-"))
    const started = await startEmbeddedPostgres(dir, { persistent: false })
    serverUrl = started.url
    stop = started.stop
  }
  const templateDb = `${TEMPLATE_DB}_${process.pid}`
  await prepareTemplate(serverUrl, templateDb)
  project.provide("serverUrl", serverUrl)
  project.provide("templateDb", templateDb)
  project.provide("browserBinary", await resolveBrowserBinary())
  return async () => {
    // The embedded Postgres goes with its directory; a server keeps what is not dropped.
    if (stop === undefined) await dropRunDatabases(serverUrl, templateDb)
    await stop?.()
    if (dir) rmSync(dir, { recursive: true, force: true })
    rmSync(dirname(tls.caFile), { recursive: true, force: true })
  }
}

/**
 * Drops this run's databases on a Postgres server. Each DROP DATABASE waits for a checkpoint of
 * its own (about half a second each after a run on the PostgreSQL 15 server, with fsync on);
 * drops that wait at the same time are served by the same checkpoint, so a few connections drop
 * side by side.
 */
const dropRunDatabases = async (serverUrl: string, templateDb: string) => {
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  const dbs = await admin.query<{ datname: string }>(
    `select datname from pg_database where datname like 'authservice_t_${process.pid}_%' or datname = $1`,
    [templateDb],
  )
  await admin.end()
  const queue = dbs.rows.map((r) => r.datname)
  const dropper = async () => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    try {
      for (let name = queue.pop(); name !== undefined; name = queue.pop())
        await client.query(`drop database if exists "${name}" with (force)`)
    } finally {
      await client.end()
    }
  }
  await Promise.all(Array.from({ length: 8 }, dropper))
}
