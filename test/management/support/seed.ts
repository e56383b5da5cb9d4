import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { insertFamily } from "../../../src/oidc/refresh/repo.js"
import { insertSession } from "../../../src/sessions/repo.js"
import type { TestApp } from "../../support/app.js"
import { query } from "./db.js"

// Rows a Management test needs beside the user: sessions, identities, passkeys, refresh families.

let counter = 0
export const randomId = (prefix: string) =>
  `${prefix}_${Array.from(randomBytes(32), (b) => "abcdefghijklmnopqrstuvwxyz234567"[b % 32]).join("")}`

/** A login session of a user, live for 7 days (idle) / 30 days (absolute) from the app clock. */
export const seedSession = (app: TestApp, input: { workspaceId: string; environmentId: string; userId: string }) =>
  app.run(
    Effect.gen(function* () {
      const id = randomId("ses")
      const now = new Date(app.now())
      yield* insertSession({
        id,
        workspaceId: input.workspaceId,
        environmentId: input.environmentId,
        userId: input.userId,
        clientId: null,
        deviceName: `device ${++counter}`,
        method: "email_otp",
        acr: "urn:example-auth:loa:basic",
        authTime: now,
        securityVersion: 1,
        ipPrefixHash: null,
        now,
        idleExpiresAt: new Date(now.getTime() + 7 * 86400_000),
        absoluteExpiresAt: new Date(now.getTime() + 30 * 86400_000),
      })
      return id
    }),
  )

export const seedIdentity = async (
  app: TestApp,
  input: { workspaceId: string; environmentId: string; userId: string; provider?: string },
) => {
  const id = randomId("idn")
  await query(
    app,
    `insert into identities (id, workspace_id, environment_id, user_id, provider, provider_subject, email, linked_at)
    values ($1, $2, $3, $4, $5, $6, 'someone@gmail.example', $7)`,
    [
      id,
      input.workspaceId,
      input.environmentId,
      input.userId,
      input.provider ?? "google",
      `sub-${id}`,
      new Date(app.now()),
    ],
  )
  return id
}

export const seedPasskey = async (
  app: TestApp,
  input: { workspaceId: string; environmentId: string; userId: string },
) => {
  const id = randomId("psk")
  const credentialId = `cred-${id}`
  await query(
    app,
    `insert into passkeys (id, workspace_id, environment_id, user_id, credential_id, public_key, sign_count, aaguid,
      backed_up, device_type, rp_id, user_handle, name, created_at)
    values ($1, $2, $3, $4, $5, $6, 42, '00000000-0000-0000-0000-000000000000', true, 'multiDevice', 'localhost', 'handle', 'My laptop', $7)`,
    [
      id,
      input.workspaceId,
      input.environmentId,
      input.userId,
      credentialId,
      Buffer.from("public-key-bytes"),
      new Date(app.now()),
    ],
  )
  return { id, credentialId }
}

/** A refresh family (with a public client) behind a session, as the token endpoint makes it. */
export const seedRefreshFamily = async (
  app: TestApp,
  input: { workspaceId: string; environmentId: string; userId: string; sessionId: string },
) => {
  const clientId = randomId("cli")
  const familyId = randomId("fam")
  const now = new Date(app.now())
  await query(
    app,
    `insert into clients (id, workspace_id, environment_id, client_type, name, token_endpoint_auth_method, created_at, updated_at)
    values ($1, $2, $3, 'web_spa', 'spa', 'none', $4, $4)`,
    [clientId, input.workspaceId, input.environmentId, now],
  )
  await app.run(
    insertFamily({
      id: familyId,
      workspaceId: input.workspaceId,
      environmentId: input.environmentId,
      clientId,
      userId: input.userId,
      sessionId: input.sessionId,
      scopes: ["openid", "offline_access"],
      resources: [],
      authTime: now,
      secretHash: "0".repeat(64),
      now,
      idleExpiresAt: new Date(now.getTime() + 30 * 86400_000),
      absoluteExpiresAt: new Date(now.getTime() + 90 * 86400_000),
    }),
  )
  return familyId
}
