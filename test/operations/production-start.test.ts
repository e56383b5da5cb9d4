import { randomBytes } from "node:crypto"
import { afterAll, describe, expect, inject, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { cloneDatabase } from "../support/template.js"
import { runEntry } from "../support/processes.js"
import { call, type Child, startEntry, stopChild } from "../faults/support.js"

// What a production process refuses or warns about at start and while serving (decisions:
// Production operation): no SMTP_URL (the development mailer would keep every login code in
// memory and deliver none), and X-Forwarded-For arriving while TRUST_PROXY trusts no proxy.

const MASTER_KEY = randomBytes(32).toString("base64url")
const PRODUCTION = {
  NODE_ENV: "production",
  MASTER_KEY,
  PLATFORM_DOMAIN: "localhost",
  CANONICAL_ISSUER_HOST: "localhost",
  MANAGEMENT_HOST: "api.localhost",
  PUBLIC_SCHEME: "http",
}
const REFUSAL =
  "authservice: SMTP_URL is required when NODE_ENV=production (without it the development mailer keeps every mail, " +
  "login codes included, in memory and delivers none); set SMTP_URL, or MAIL_ALLOW_DEV_MAILER=true to start without mail delivery"

const children: Array<Child> = []
afterAll(async () => {
  await Promise.all(children.map(stopChild))
})

/** The JSON log lines of a production process whose `msg` matches. */
const logLines = (child: Child, msg: RegExp) =>
  child
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: string; msg: string })
    .filter((l) => msg.test(l.msg))

describe("NODE_ENV=production without SMTP_URL", () => {
  it("the server, the worker and `npm start` refuse to start with one line naming SMTP_URL and MAIL_ALLOW_DEV_MAILER, before touching the database", async () => {
    // An address where no database listens: the refusal comes first, so the process never gets that far.
    const env = {
      ...PRODUCTION,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/none`,
      PORT: String(await freePort()),
    }
    const outcomes = await Promise.all(
      ["src/main.ts", "src/worker.ts", "src/start.ts"].map((entry) => runEntry(entry, [], env)),
    )
    for (const outcome of outcomes) {
      expect(outcome.code).toBe(1)
      expect(outcome.stderr.trim().split("\n")).toEqual([REFUSAL])
      expect(outcome.stdout).toBe("")
    }
    // A value that is not a switch is a configuration error of its own.
    const bad = await runEntry("src/main.ts", [], { ...env, MAIL_ALLOW_DEV_MAILER: "perhaps" })
    expect([bad.code, bad.stderr.trim()]).toEqual([
      1,
      'authservice: MAIL_ALLOW_DEV_MAILER must be true or false (got "perhaps")',
    ])
  }, 120_000)

  it("MAIL_ALLOW_DEV_MAILER=true starts it (with a warning); X-Forwarded-For without TRUST_PROXY is warned about once per process, never with TRUST_PROXY set", async () => {
    const database = await cloneDatabase(inject("serverUrl"), inject("templateDb"))
    const start = async (extra: Record<string, string>) => {
      const port = await freePort()
      const child = await startEntry(
        "src/main.ts",
        {
          ...PRODUCTION,
          DATABASE_URL: database.url,
          PORT: String(port),
          MAIL_ALLOW_DEV_MAILER: "true",
          CANONICAL_ISSUER_HOST: `localhost:${port}`,
          MANAGEMENT_HOST: `api.localhost:${port}`,
          ...extra,
        },
        /"msg":"listening"/,
      )
      children.push(child)
      return { child, port, management: `api.localhost:${port}` }
    }
    const [untrusted, trusted] = await Promise.all([start({}), start({ TRUST_PROXY: "1" })])
    for (const server of [untrusted, trusted]) {
      expect(logLines(server.child, /MAIL_ALLOW_DEV_MAILER=true/)).toEqual(
        [
          {
            level: "warn",
            msg: "SMTP_URL is unset and MAIL_ALLOW_DEV_MAILER=true: mail (login codes included) is kept in memory and not delivered",
          },
        ].map((l) => expect.objectContaining(l)),
      )
      // Requests without the header say nothing.
      expect((await call(server.port, server.management, "/readyz")).status).toBe(200)
      expect(logLines(server.child, /TRUST_PROXY/)).toEqual([])
      for (let i = 0; i < 3; i++) {
        const res = await call(server.port, server.management, "/readyz", {
          headers: { "x-forwarded-for": `203.0.113.${i + 1}` },
        })
        expect(res.status).toBe(200)
      }
      await call(server.port, server.management, "/healthz", { headers: { forwarded: "for=198.51.100.7" } })
    }
    // The request lines are written before the answer; the warning before them.
    const warnings = logLines(untrusted.child, /TRUST_PROXY/)
    expect(warnings).toEqual([
      expect.objectContaining({
        level: "warn",
        msg: expect.stringMatching(/^Requests carry X-Forwarded-For but TRUST_PROXY is unset/),
      }),
    ])
    expect(logLines(trusted.child, /TRUST_PROXY/)).toEqual([])
  }, 120_000)
})
