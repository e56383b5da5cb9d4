import { Effect, Layer } from "effect"
import pg from "pg"
import { installWorkerSchema } from "../../src/platform/worker-schema.js"
import { DatabaseUrl, runMigrations, SqlLive } from "../../src/platform/database.js"

export const TEMPLATE_DB = "authservice_template"

export const databaseUrl = (serverUrl: string, database: string) => {
  const url = new URL(serverUrl)
  url.pathname = `/${database}`
  return url.toString()
}

export const adminQuery = async (serverUrl: string, text: string) => {
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(text)
  } finally {
    await admin.end()
  }
}

/**
 * Makes Postgres refuse (or accept again) new connections to `database`; refusing also ends its
 * open sessions, so the next statement of a pool must reconnect and fails (SQLSTATE 55000).
 */
export const allowConnections = async (serverUrl: string, database: string, allowed: boolean) => {
  await adminQuery(serverUrl, `alter database "${database}" allow_connections ${allowed}`)
  if (!allowed)
    await adminQuery(
      serverUrl,
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database}' and pid <> pg_backend_pid()`,
    )
}

/** Creates the template database with our migrations and graphile-worker's schema. */
export const prepareTemplate = async (serverUrl: string, templateDb: string) => {
  await adminQuery(serverUrl, `drop database if exists "${templateDb}" with (force)`)
  await adminQuery(serverUrl, `create database "${templateDb}"`)
  const url = databaseUrl(serverUrl, templateDb)
  await Effect.runPromise(
    runMigrations.pipe(
      Effect.provide(
        SqlLive({ maxConnections: 1, statementTimeoutMs: 60_000 }).pipe(Layer.provide(Layer.succeed(DatabaseUrl, url))),
      ),
      Effect.scoped,
    ),
  )
  await Effect.runPromise(installWorkerSchema(url))
}

/** The run's prefix of every database a test file makes: the run's end drops them all (global-setup). */
const runPrefix = (templateDb: string) => `authservice_t_${templateDb.split("_").pop()}`

/**
 * An empty database of a test file's own (not a clone of the template), named `label`. The file
 * never drops it: the run's end drops it with the clones. A DROP DATABASE forces an immediate
 * checkpoint and waits for it, which on a server with fsync on and the rest of the suite writing
 * can outlast a hook's 60 s (CI, on the PostgreSQL 15 server: an afterAll's drop timed out).
 */
export const scratchDatabase = async (serverUrl: string, templateDb: string, label: string) => {
  const name = `${runPrefix(templateDb)}_${label}_${process.pid}`
  await adminQuery(serverUrl, `create database "${name}"`)
  return { name, url: databaseUrl(serverUrl, name) }
}

let counter = 0
/** A fresh database cloned from the template, for one test file. */
export const cloneDatabase = async (serverUrl: string, templateDb: string) => {
  const name = `${runPrefix(templateDb)}_${process.pid}_${++counter}`
  await adminQuery(serverUrl, `create database "${name}" template "${templateDb}"`)
  return { name, url: databaseUrl(serverUrl, name) }
}
