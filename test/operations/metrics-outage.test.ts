import { afterAll, beforeAll, expect, it } from "vitest"
import { inject } from "vitest"
import { type TestApp, startApp } from "../support/app.js"
import { adminQuery } from "../support/template.js"
import { sample } from "./support.js"

// A scrape during a database outage: the process still has its own numbers (requests, jobs,
// pools, Node's process metrics); only the gauges read from the database are left out, and a
// gauge says so. The outage is real: the app's database stops accepting connections and its
// open connections are cut, as when Postgres goes away.

let app: TestApp
let database: string

const scrape = () => app.request(app.config.managementHost, "/metrics")

const setConnections = (allowed: boolean) =>
  adminQuery(inject("serverUrl"), `alter database "${database}" allow_connections ${allowed}`)

beforeAll(async () => {
  app = await startApp()
  database = new URL(app.databaseUrl).pathname.slice(1)
})
afterAll(async () => {
  await setConnections(true).catch(() => {})
  await app?.close()
})

it('with the database down, /metrics still answers 200 with the process\'s own metrics; the database gauges are left out and authservice_metrics_scrape_error{part="database"} is 1', async () => {
  await app.request(app.config.managementHost, "/v1/no/such/path")
  const healthy = await scrape()
  expect(healthy.status).toBe(200)
  expect(sample(healthy.text, "authservice_metrics_scrape_error", { part: "database" })).toBe(0)
  expect(sample(healthy.text, "authservice_job_queue_depth", { state: "due" })).toBeGreaterThanOrEqual(0)
  expect(sample(healthy.text, "authservice_db_connections", { pool: "sql", state: "active" })).toBeGreaterThanOrEqual(1)

  await setConnections(false)
  await adminQuery(
    inject("serverUrl"),
    `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${database}' and pid <> pg_backend_pid()`,
  )
  const started = performance.now()
  const down = await scrape()
  expect(performance.now() - started).toBeLessThan(5_000)
  expect(down.status, down.text).toBe(200)
  expect(sample(down.text, "authservice_metrics_scrape_error", { part: "database" })).toBe(1)
  // What the process itself holds is still served.
  expect(
    sample(down.text, "authservice_http_requests_total", {
      surface: "management",
      method: "GET",
      route: "unmatched",
      status: "404",
    }),
  ).toBe(1)
  expect(sample(down.text, "authservice_db_pool_max_connections")).toBeGreaterThan(0)
  expect(sample(down.text, "process_resident_memory_bytes")).toBeGreaterThan(0)
  // The numbers that need the database are absent, not stale.
  expect(sample(down.text, "authservice_job_queue_depth", { state: "due" })).toBeUndefined()
  expect(down.text).not.toMatch(/^authservice_db_connections\{/m)
  expect(down.text).not.toMatch(/^authservice_job_queue_lag_seconds\{/m)

  // Back: the gauges return and the error clears.
  await setConnections(true)
  const back = await scrape()
  expect(sample(back.text, "authservice_metrics_scrape_error", { part: "database" })).toBe(0)
  expect(sample(back.text, "authservice_job_queue_depth", { state: "due" })).toBeGreaterThanOrEqual(0)
})
