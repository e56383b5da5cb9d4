import { randomBytes } from "node:crypto"
import { Cause, Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { expect } from "vitest"
import type { CeremonyContext, CeremonyScope } from "../../../src/passkeys/service.js"
import { Tenancy } from "../../../src/tenancy/service.js"
import { environmentUrls } from "../../../src/tenancy/urls.js"
import { Users } from "../../../src/users/service.js"
import type { UserRow } from "../../../src/users/repo.js"
import type { Bootstrapped, TestApp } from "../../support/app.js"
import type { TestResponse } from "../../support/http.js"

/** Runs SQL on the app's database (setup and assertions on stored state). */
export const query = <A extends object>(app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  app.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql.unsafe<A>(text, params as Array<unknown>)
    }),
  ) as Promise<ReadonlyArray<A>>

/** The Environment's record and public URLs, read fresh (the Tenancy cache is dropped first). */
export const environment = (app: TestApp, environmentId: string) =>
  app.run(
    Effect.gen(function* () {
      const tenancy = yield* Tenancy
      tenancy.forgetEnvironment(environmentId)
      const env = (yield* tenancy.environment(environmentId))!
      return { env, urls: environmentUrls(app.config, env) }
    }),
  )

export const createUser = (app: TestApp, boot: Bootstrapped, email: string, fields: { name?: string } = {}) =>
  app.run(
    Effect.gen(function* () {
      const users = yield* Users
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.withTransaction(
        users.create({
          workspaceId: boot.workspace_id,
          environmentId: boot.environment_id,
          email,
          emailVerified: true,
          method: "email_otp",
          ...(fields.name ? { name: fields.name } : {}),
        }),
      ))!
    }),
  ) as Promise<UserRow>

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
/** A random id in the spec's format: prefix + 32 characters of [a-z2-7]. */
export const randomId = (prefix: string) => `${prefix}_${[...randomBytes(32)].map((b) => ALPHABET[b % 32]).join("")}`

/** A fresh ceremony context (the challenge table does not depend on the transaction table). */
export const freshContext = (kind: "transaction" | "session" = "transaction"): CeremonyContext => {
  const id = randomId("x").slice(2)
  return kind === "transaction" ? { kind, transactionId: `txn_${id}` } : { kind, sessionId: `ses_${id}` }
}

export const scopeOf = async (
  app: TestApp,
  boot: Bootstrapped,
  options: { context?: CeremonyContext; clientId?: string | null } = {},
): Promise<CeremonyScope> => {
  const { env, urls } = await environment(app, boot.environment_id)
  return { env, urls, context: options.context ?? freshContext(), clientId: options.clientId ?? null }
}

/** Inserts a Client row directly (the Management API's own tests cover its validation). */
export const insertClient = async (
  app: TestApp,
  boot: Bootstrapped,
  client: {
    id: string
    type: "web_bff" | "web_spa" | "react_native"
    allowedOrigins?: Array<string>
    mobileApp?: Record<string, unknown> | null
  },
) => {
  await query(
    app,
    `insert into clients (id, workspace_id, environment_id, client_type, name, token_endpoint_auth_method,
      redirect_uris, allowed_origins, mobile_app, created_at, updated_at)
    values ($1, $2, $3, $4, 'test client', 'none', $5, $6, $7::jsonb, now(), now())`,
    [
      client.id,
      boot.workspace_id,
      boot.environment_id,
      client.type,
      client.type === "react_native" ? ["com.example.app:/callback"] : ["https://app.example.com/callback"],
      client.allowedOrigins ?? [],
      client.mobileApp === undefined || client.mobileApp === null ? null : JSON.stringify(client.mobileApp),
    ],
  )
  return client.id
}

/** Runs an effect and returns its typed failure (fails the test if it succeeded or died). */
export const failureOf = async <E>(app: TestApp, effect: Effect.Effect<unknown, E, any>): Promise<E> => {
  const exit = await app.run(Effect.exit(effect))
  if (Exit.isSuccess(exit)) throw new Error("expected a failure, got a success")
  const error = Cause.squash(exit.cause)
  return error as E
}

export const eventsOf = (app: TestApp, environmentId: string, type: string) =>
  query<{ envelope: any }>(
    app,
    "select envelope from event_outbox where environment_id = $1 and type = $2 order by seq",
    [environmentId, type],
  ).then((rows) => rows.map((r) => r.envelope))

export const count = async (app: TestApp, text: string, params: ReadonlyArray<unknown> = []) =>
  Number((await query<{ n: number }>(app, text, params))[0]!.n)

/** Asserts a Problem Details answer: status, code and request id. */
export const expectProblem = (res: TestResponse, status: number, code: string) => {
  expect({ status: res.status, code: res.json?.code, detail: res.json?.detail }).toMatchObject({ status, code })
  expect(res.headers["content-type"]).toContain("application/problem+json")
  expect(res.json.request_id).toBe(res.headers["x-request-id"])
}
