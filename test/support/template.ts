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

let counter = 0
/** A fresh database cloned from the template, for one test file. */
export const cloneDatabase = async (serverUrl: string, templateDb: string) => {
  const name = `authservice_t_${templateDb.split("_").pop()}_${process.pid}_${++counter}`
  await adminQuery(serverUrl, `create database "${name}" template "${templateDb}"`)
  return { name, url: databaseUrl(serverUrl, name) }
}
