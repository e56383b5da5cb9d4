import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { splitStatements } from "../../src/platform/sql-split.js"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { query } from "../login/support.js"
import { createUser } from "../oidc/support.js"
import { randomId } from "../passkeys/support/helpers.js"
import { makeEnvironment } from "../support/tenancy.js"
import { createConnection } from "./support.js"

// sql/0167's backfill (docs/decisions/social-login.md, Social login: "Identities carry their issuer"): each
// existing identity gets the issuer and subject claim of the connection it was made with. The
// test database is already migrated, so rows are put back as they were before 0167 (no issuer,
// claim `sub`, a non-generic connection with a `sub` mapping) and the file's UPDATE statements
// are run again, as the migration runs them.

let app: TestApp
let b: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  b = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

/** The file's backfill: its session-local helper function and its UPDATE statements. */
const backfill = splitStatements(readFileSync(new URL("../../sql/0167_identity_issuer.sql", import.meta.url), "utf8"))
  .map((statement) => statement.replace(/--[^\n]*\n/g, "").trim())
  .filter((statement) => statement.startsWith("update ") || statement.startsWith("create or replace function pg_temp."))

describe("sql/0167 backfill", () => {
  it("fixed issuers for Google, Apple and GitHub, the connection's issuer and sub mapping for generic OIDC, none for Microsoft; other providers' sub mappings dropped", async () => {
    const id = await makeEnvironment(app, b.workspace_id, b.project_id)
    const env: Bootstrapped = { ...b, environment_id: id }
    const user = await createUser(app, env)
    const connect = (provider: string, key: string, extra: Record<string, unknown> = {}) =>
      createConnection(app, env, {
        provider,
        provider_key: key,
        provider_client_id: "id",
        provider_client_secret: "secret",
        ...extra,
      })
    const old = await connect("generic_oidc", "old-sso", {
      issuer: "https://old-idp.example.com",
      profile_mapping: { sub: "employee_id" },
    })
    const identity = async (provider: string, connectionId: string | null) => {
      const row = randomId("idn")
      await query(
        app,
        `insert into identities (id, workspace_id, environment_id, user_id, connection_id, provider, provider_subject, linked_at)
        values ($1, $2, $3, $4, $5, $6, $7, now())`,
        [row, b.workspace_id, id, user.id, connectionId, provider, randomId("sub")],
      )
      return row
    }
    const ofDeleted = await identity("old-sso", old.id)
    expect((await app.management(`/v1/connections/${old.id}`, { method: "DELETE" })).status).toBe(200)
    const google = await connect("google", "google")
    const apple = await connect("apple", "apple")
    const github = await connect("github", "github")
    const microsoft = await connect("microsoft", "microsoft")
    const sso = await connect("generic_oidc", "corp-sso", {
      issuer: "https://idp.example.com",
      profile_mapping: { sub: "oid", email: "mail" },
    })
    // Before sql/0167 a GitHub connection could read the subject from `login`.
    await query(
      app,
      `update connections set profile_mapping = '{"sub": "login", "name": "name"}'::jsonb where id = $1`,
      [github.id],
    )
    const rows = {
      google: await identity("google", google.id),
      apple: await identity("apple", apple.id),
      github: await identity("github", github.id),
      microsoft: await identity("microsoft", microsoft.id),
      sso: await identity("corp-sso", sso.id),
      ofDeleted,
      withoutConnection: await identity("google", null),
    }
    await query(app, "update identities set provider_issuer = null, subject_claim = 'sub' where environment_id = $1", [
      id,
    ])
    const versions = await query<{ id: string; version: number }>(
      app,
      "select id, version from connections where environment_id = $1",
      [id],
    )

    expect(backfill).toHaveLength(5)
    // One SQL transaction, as the migrator runs a file (the pg_temp function is its session's).
    await app.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(Effect.forEach(backfill, (statement) => sql.unsafe(statement), { discard: true }))
      }),
    )

    const after = await query<{ id: string; provider_issuer: string | null; subject_claim: string }>(
      app,
      "select id, provider_issuer, subject_claim from identities where environment_id = $1",
      [id],
    )
    const of = (row: string) => after.find((r) => r.id === row)
    expect(of(rows.google)).toMatchObject({ provider_issuer: "https://accounts.google.com", subject_claim: "sub" })
    expect(of(rows.apple)).toMatchObject({ provider_issuer: "https://appleid.apple.com", subject_claim: "sub" })
    expect(of(rows.github)).toMatchObject({ provider_issuer: "https://github.com", subject_claim: "login" })
    expect(of(rows.microsoft)).toMatchObject({ provider_issuer: null, subject_claim: "sub" })
    expect(of(rows.sso)).toMatchObject({ provider_issuer: "https://idp.example.com", subject_claim: "oid" })
    // the connection it was made with, though deleted since
    expect(of(rows.ofDeleted)).toMatchObject({
      provider_issuer: "https://old-idp.example.com",
      subject_claim: "employee_id",
    })
    // no reference: the live connection of its key
    expect(of(rows.withoutConnection)).toMatchObject({
      provider_issuer: "https://accounts.google.com",
      subject_claim: "sub",
    })

    // GitHub's sub mapping is dropped (its identity keeps `login`: stale, re-linked after a proof); generic OIDC keeps its own.
    const connections = await query<{ id: string; profile_mapping: Record<string, string>; version: number }>(
      app,
      "select id, profile_mapping, version from connections where environment_id = $1",
      [id],
    )
    const connection = (cid: string) => connections.find((c) => c.id === cid)!
    expect(connection(github.id).profile_mapping).toEqual({ name: "name" })
    expect(connection(github.id).version).toBe(versions.find((v) => v.id === github.id)!.version + 1)
    expect(connection(sso.id).profile_mapping).toEqual({ sub: "oid", email: "mail" })
    expect(connection(sso.id).version).toBe(versions.find((v) => v.id === sso.id)!.version)
  })
})
