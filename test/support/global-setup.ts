import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
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
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    const dbs = await admin.query<{ datname: string }>(
      `select datname from pg_database where datname like 'authservice_t_${process.pid}_%' or datname = $1`,
      [templateDb],
    )
    for (const { datname } of dbs.rows) await admin.query(`drop database if exists "${datname}" with (force)`)
    await admin.end()
    await stop?.()
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
}
