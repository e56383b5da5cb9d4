import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Passkeys, type CeremonyScope } from "../../src/passkeys/service.js"
import { sweepPasskeys } from "../../src/passkeys/housekeeping.js"
import { androidOrigin } from "../../src/passkeys/origins.js"
import type { UserRow } from "../../src/users/repo.js"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { SoftwareAuthenticator } from "./support/authenticator.js"
import {
  count,
  createUser,
  environment,
  eventsOf,
  failureOf,
  freshContext,
  insertClient,
  query,
  randomId,
  scopeOf,
} from "./support/helpers.js"

// Service-level tests of the ceremonies (spec: Passkey (WebAuthn) rules 2-6) with a software
// authenticator producing real attestation objects and ES256 assertions.

let app: TestApp
let boot: Bootstrapped
beforeAll(async () => {
  app = await startApp()
  boot = await app.bootstrap()
})
afterAll(async () => {
  await app?.close()
})

const passkeys = <A, E>(f: (p: typeof Passkeys.Service) => Effect.Effect<A, E, any>) =>
  Effect.gen(function* () {
    return yield* f(yield* Passkeys)
  })

const creation = (scope: CeremonyScope, user: UserRow, request: { rp_id?: string } = {}) =>
  app.run(passkeys((p) => p.creationOptions(scope, user, request)))
const request = (scope: CeremonyScope, body: { email?: string; rp?: "active" | "legacy"; rp_id?: string } = {}) =>
  app.run(passkeys((p) => p.requestOptions(scope, body)))
const register = (scope: CeremonyScope, user: UserRow, credential: any, name?: string) =>
  passkeys((p) => p.verifyRegistration(scope, user, name === undefined ? { credential } : { credential, name }))
const authenticate = (scope: CeremonyScope, credential: any) =>
  passkeys((p) => p.verifyAuthentication(scope, credential, (v) => Effect.succeed(v)))

const origin = (scope: CeremonyScope) => scope.urls.interactionOrigin

/** A user with one registered passkey on a fresh software authenticator. */
const enrolled = async (
  email: string,
  options: ConstructorParameters<typeof SoftwareAuthenticator>[0] = {},
  scopeOptions: Parameters<typeof scopeOf>[2] = {},
) => {
  const user = await createUser(app, boot, email)
  const authenticator = new SoftwareAuthenticator(options)
  const scope = await scopeOf(app, boot, scopeOptions)
  const opts = await creation(scope, user)
  const passkey = await app.run(register(scope, user, authenticator.create(opts, { origin: origin(scope) }), "Laptop"))
  return { user, authenticator, passkey, scope }
}

describe("creation options (rule 2)", () => {
  it("carry rp, an opaque user handle, ES256 and RS256, resident key and user verification required, attestation none", async () => {
    const user = await createUser(app, boot, "shape@example.com", { name: "Shape Person" })
    const scope = await scopeOf(app, boot)
    const options = await creation(scope, user)
    expect(options.rp).toEqual({ id: scope.urls.rpId, name: scope.env.name })
    expect(options.rp.id).toMatch(/^env-[a-z2-7]{32}\.login\.localhost$/)
    expect(options.user).toEqual({ id: user.user_handle, name: "shape@example.com", displayName: "Shape Person" })
    expect(options.user.id).not.toContain("shape")
    expect(Buffer.from(options.user.id, "base64url")).toHaveLength(32)
    expect(Buffer.from(options.challenge, "base64url")).toHaveLength(32)
    const algs = options.pubKeyCredParams.map((p) => p.alg)
    expect(algs).toEqual(expect.arrayContaining([-7, -257]))
    expect(options.pubKeyCredParams.every((p) => p.type === "public-key")).toBe(true)
    expect(options.timeout).toBe(300_000)
    expect(options.excludeCredentials).toEqual([])
    expect(options.authenticatorSelection).toEqual({
      residentKey: "required",
      requireResidentKey: true,
      userVerification: "required",
    })
    expect(options.authenticatorSelection).not.toHaveProperty("authenticatorAttachment")
    expect(options.attestation).toBe("none")
  })

  it("exclude the user's existing passkeys", async () => {
    const { user, passkey } = await enrolled("exclude@example.com")
    const options = await creation(await scopeOf(app, boot), user)
    expect(options.excludeCredentials).toEqual([
      { id: passkey.credential_id, type: "public-key", transports: ["internal"] },
    ])
  })

  it("each new options call replaces the open challenge of the context", async () => {
    const user = await createUser(app, boot, "replace@example.com")
    const scope = await scopeOf(app, boot)
    const first = await creation(scope, user)
    const second = await creation(scope, user)
    expect(first.challenge).not.toBe(second.challenge)
    expect(
      await count(
        app,
        "select count(*) as n from webauthn_challenges where transaction_id = $1 and consumed_at is null",
        [(scope.context as { transactionId: string }).transactionId],
      ),
    ).toBe(1)
    const authenticator = new SoftwareAuthenticator()
    const stale = await failureOf(app, register(scope, user, authenticator.create(first, { origin: origin(scope) })))
    expect(stale).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
  })
})

describe("registration verification (rule 4)", () => {
  it("stores the passkey with its public key, counter, AAGUID and backup state; emits passkey.created and an audit record", async () => {
    const aaguid = Buffer.from("00112233445566778899aabbccddeeff", "hex")
    const { user, passkey } = await enrolled("stored@example.com", { aaguid, backupEligible: true, backedUp: true })
    expect(passkey).toMatchObject({
      user_id: user.id,
      name: "Laptop",
      aaguid: "00112233-4455-6677-8899-aabbccddeeff",
      backed_up: true,
      device_type: "multi_device",
      rp_id: (await environment(app, boot.environment_id)).urls.rpId,
      user_handle: user.user_handle,
      transports: ["internal"],
      sign_count: "0",
    })
    expect(passkey.id).toMatch(/^psk_[a-z2-7]{32}$/)
    const [row] = await query<{ public_key: Uint8Array }>(app, "select public_key from passkeys where id = $1", [
      passkey.id,
    ])
    expect(row!.public_key.length).toBeGreaterThan(64)
    const created = (await eventsOf(app, boot.environment_id, "passkey.created")).filter(
      (e) => e.payload.passkeyId === passkey.id,
    )
    expect(created).toHaveLength(1)
    expect(created[0].payload).toEqual({
      userId: user.id,
      passkeyId: passkey.id,
      aaguid: "00112233-4455-6677-8899-aabbccddeeff",
      backedUp: true,
    })
    expect(
      await count(app, "select count(*) as n from audit_events where action = 'passkey.created' and subject_id = $1", [
        passkey.id,
      ]),
    ).toBe(1)
  })

  const refusals: Array<[string, string, (a: SoftwareAuthenticator, o: any, scope: CeremonyScope) => unknown]> = [
    ["a wrong origin", "origin", (a, o) => a.create(o, { origin: "https://evil.example" })],
    ["a wrong RP ID", "RP ID", (a, o, s) => a.create(o, { origin: origin(s), rpId: "evil.example" })],
    ["user presence off", "User presence", (a, o, s) => a.create(o, { origin: origin(s), up: false })],
    ["user verification off", "User verification", (a, o, s) => a.create(o, { origin: origin(s), uv: false })],
    [
      "another challenge",
      "challenge",
      (a, o, s) => a.create(o, { origin: origin(s), challenge: Buffer.alloc(32, 7).toString("base64url") }),
    ],
    ["a webauthn.get client data type", "type", (a, o, s) => a.create(o, { origin: origin(s), type: "webauthn.get" })],
  ]
  for (const [name, detail, make] of refusals) {
    it(`refuses ${name}: webauthn_verification_failed, challenge consumed, nothing stored`, async () => {
      const user = await createUser(app, boot, `reg-${name.replace(/\W+/g, "-")}@example.com`)
      const scope = await scopeOf(app, boot)
      const options = await creation(scope, user)
      const authenticator = new SoftwareAuthenticator()
      const error = await failureOf(app, register(scope, user, make(authenticator, options, scope)))
      expect(error).toMatchObject({ _tag: "WebAuthnVerificationFailed", detail: expect.stringContaining(detail) })
      expect(await count(app, "select count(*) as n from passkeys where user_id = $1", [user.id])).toBe(0)
      expect(
        await count(
          app,
          "select count(*) as n from webauthn_challenges where transaction_id = $1 and consumed_at is null",
          [(scope.context as { transactionId: string }).transactionId],
        ),
      ).toBe(0)
      // the challenge is gone: even a correct response to it is refused now
      const retry = await failureOf(
        app,
        register(scope, user, authenticator.create(options, { origin: origin(scope) })),
      )
      expect(retry).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
      expect(
        await count(
          app,
          "select count(*) as n from audit_events where action = 'passkey.registration_failed' and subject_id = $1",
          [user.id],
        ),
      ).toBe(2)
    })
  }

  it("refuses a challenge issued for another user", async () => {
    const alice = await createUser(app, boot, "alice-reg@example.com")
    const bob = await createUser(app, boot, "bob-reg@example.com")
    const scope = await scopeOf(app, boot)
    const options = await creation(scope, alice)
    const error = await failureOf(
      app,
      register(scope, bob, new SoftwareAuthenticator().create(options, { origin: origin(scope) })),
    )
    expect(error).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
    expect(await count(app, "select count(*) as n from passkeys where user_id in ($1, $2)", [alice.id, bob.id])).toBe(0)
  })

  it("refuses an expired challenge (timeout 5 minutes)", async () => {
    const user = await createUser(app, boot, "expired-reg@example.com")
    const scope = await scopeOf(app, boot)
    const options = await creation(scope, user)
    await app.advance("5 minutes")
    const error = await failureOf(
      app,
      register(scope, user, new SoftwareAuthenticator().create(options, { origin: origin(scope) })),
    )
    expect(error).toMatchObject({ _tag: "WebAuthnVerificationFailed", detail: expect.stringContaining("expired") })
  })
})

describe("request options (rule 3)", () => {
  it("are discoverable: challenge, rpId, timeout, empty allowCredentials, userVerification required", async () => {
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    expect(options).toEqual({
      challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      rpId: scope.urls.rpId,
      timeout: 300_000,
      allowCredentials: [],
      userVerification: "required",
    })
  })

  it("look the same for a registered email with passkeys, a registered email without, and an unknown email", async () => {
    const { user } = await enrolled("known-email@example.com")
    await createUser(app, boot, "no-passkey@example.com")
    const shapes = []
    for (const email of [user.email, "no-passkey@example.com", "nobody@example.com"]) {
      const options = await request(await scopeOf(app, boot), { email })
      shapes.push({ ...options, challenge: "x" })
    }
    expect(shapes[0]).toEqual(shapes[1])
    expect(shapes[1]).toEqual(shapes[2])
    expect(shapes[0]!.allowCredentials).toEqual([])
  })

  it("refuse rp together with rp_id, and rp legacy when there is no live legacy RP ID", async () => {
    const scope = await scopeOf(app, boot)
    expect(
      await failureOf(
        app,
        passkeys((p) => p.requestOptions(scope, { rp: "active", rp_id: scope.urls.rpId })),
      ),
    ).toMatchObject({ _tag: "InvalidRequest" })
    expect(
      await failureOf(
        app,
        passkeys((p) => p.requestOptions(scope, { rp: "legacy" })),
      ),
    ).toMatchObject({ _tag: "InvalidRequest" })
  })
})

describe("authentication verification (rules 4 and 6)", () => {
  it("accepts a valid assertion: returns the user, records the counter and last use", async () => {
    const { user, authenticator, passkey } = await enrolled("login@example.com")
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    const verified = await app.run(authenticate(scope, authenticator.get(options, { origin: origin(scope) })))
    expect(verified.user.id).toBe(user.id)
    expect(verified.passkey.id).toBe(passkey.id)
    const [row] = await query<{ sign_count: string; last_used_at: Date | null }>(
      app,
      "select sign_count::text, last_used_at from passkeys where id = $1",
      [passkey.id],
    )
    expect(row).toMatchObject({ sign_count: "1" })
    expect(row!.last_used_at?.getTime()).toBe(app.now())
  })

  type Knobs = Parameters<SoftwareAuthenticator["get"]>[1]
  const refusals: Array<[string, string, (s: CeremonyScope) => Knobs]> = [
    ["a wrong origin", "origin", () => ({ origin: "https://evil.example" })],
    ["a wrong RP ID", "RP ID", (s) => ({ origin: origin(s), rpId: "evil.example" })],
    ["user presence off", "User presence", (s) => ({ origin: origin(s), up: false })],
    ["user verification off", "User verification", (s) => ({ origin: origin(s), uv: false })],
    ["a tampered signature", "signature", (s) => ({ origin: origin(s), tamperSignature: true })],
    ["tampered authenticator data", "signature", (s) => ({ origin: origin(s), tamperAuthenticatorData: true })],
    [
      "a user handle that does not match",
      "user handle",
      (s) => ({ origin: origin(s), userHandle: Buffer.alloc(32, 1).toString("base64url") }),
    ],
    ["a missing user handle", "user handle", (s) => ({ origin: origin(s), userHandle: null })],
    [
      "another challenge",
      "challenge",
      (s) => ({ origin: origin(s), challenge: Buffer.alloc(32, 9).toString("base64url") }),
    ],
    ["a webauthn.create client data type", "type", (s) => ({ origin: origin(s), type: "webauthn.create" })],
  ]
  for (const [name, detail, knobs] of refusals) {
    it(`refuses ${name}: challenge consumed, counter unchanged, login.failed recorded`, async () => {
      const { user, authenticator, passkey } = await enrolled(`auth-${name.replace(/\W+/g, "-")}@example.com`)
      const scope = await scopeOf(app, boot)
      const options = await request(scope)
      const before = (await eventsOf(app, boot.environment_id, "login.failed")).length
      const error = await failureOf(app, authenticate(scope, authenticator.get(options, knobs(scope))))
      expect(error).toMatchObject({ _tag: "WebAuthnVerificationFailed", detail: expect.stringContaining(detail) })
      const [row] = await query<{ sign_count: string; last_used_at: Date | null }>(
        app,
        "select sign_count::text, last_used_at from passkeys where id = $1",
        [passkey.id],
      )
      expect(row).toEqual({ sign_count: "0", last_used_at: null })
      const failed = (await eventsOf(app, boot.environment_id, "login.failed")).slice(before)
      expect(failed).toHaveLength(1)
      expect(failed[0].payload).toEqual({ method: "passkey", reason: "passkey_verification_failed", userId: user.id })
      expect(
        await count(
          app,
          "select count(*) as n from audit_events where action = 'login.failed' and subject_id = $1 and result = 'failure'",
          [user.id],
        ),
      ).toBe(1)
      // a correct answer to the same (consumed) challenge is refused too
      const again = await failureOf(app, authenticate(scope, authenticator.get(options, { origin: origin(scope) })))
      expect(again).toMatchObject({
        _tag: "WebAuthnVerificationFailed",
        detail: expect.stringContaining("No open challenge"),
      })
    })
  }

  it("refuses an unknown credential (login.failed without a user)", async () => {
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    const stranger = new SoftwareAuthenticator()
    stranger.create(
      { challenge: "AA", rp: { id: scope.urls.rpId, name: "x" }, user: { id: "AAAA", name: "x", displayName: "x" } },
      { origin: origin(scope) },
    )
    const before = (await eventsOf(app, boot.environment_id, "login.failed")).length
    expect(await failureOf(app, authenticate(scope, stranger.get(options, { origin: origin(scope) })))).toMatchObject({
      _tag: "WebAuthnVerificationFailed",
    })
    const failed = (await eventsOf(app, boot.environment_id, "login.failed")).slice(before)
    expect(failed.map((e) => e.payload)).toEqual([{ method: "passkey", reason: "passkey_verification_failed" }])
  })

  it("a reused challenge is refused after a success", async () => {
    const { authenticator } = await enrolled("reuse@example.com")
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    await app.run(authenticate(scope, authenticator.get(options, { origin: origin(scope) })))
    const replay = await failureOf(app, authenticate(scope, authenticator.get(options, { origin: origin(scope) })))
    expect(replay).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
  })

  it("race: two concurrent verifies of one challenge, exactly one wins", async () => {
    const { authenticator } = await enrolled("race@example.com", { backupEligible: true, backedUp: true })
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    const response = authenticator.get(options, { origin: origin(scope) })
    const results = await Promise.all([0, 1, 2, 3].map(() => app.run(Effect.exit(authenticate(scope, response)))))
    expect(results.filter((r) => r._tag === "Success")).toHaveLength(1)
    expect(results.filter((r) => r._tag === "Failure")).toHaveLength(3)
  })

  it("a synced passkey is never blocked by its counter (rule 6); the reported value is stored", async () => {
    const { authenticator, passkey } = await enrolled("synced@example.com", { backupEligible: true, backedUp: true })
    for (const reported of [5, 5, 0, 3]) {
      const scope = await scopeOf(app, boot)
      const options = await request(scope)
      await app.run(authenticate(scope, authenticator.get(options, { origin: origin(scope), signCount: reported })))
      const [row] = await query<{ sign_count: string }>(app, "select sign_count::text from passkeys where id = $1", [
        passkey.id,
      ])
      expect(row!.sign_count).toBe(String(reported))
    }
  })

  it("a device-bound passkey whose counter does not increase is refused (cloned authenticator)", async () => {
    const { authenticator, passkey } = await enrolled("bound@example.com")
    let scope = await scopeOf(app, boot)
    await app.run(authenticate(scope, authenticator.get(await request(scope), { origin: origin(scope), signCount: 7 })))
    scope = await scopeOf(app, boot)
    const error = await failureOf(
      app,
      authenticate(scope, authenticator.get(await request(scope), { origin: origin(scope), signCount: 7 })),
    )
    expect(error).toMatchObject({ _tag: "WebAuthnVerificationFailed", detail: expect.stringContaining("counter") })
    const [row] = await query<{ sign_count: string }>(app, "select sign_count::text from passkeys where id = $1", [
      passkey.id,
    ])
    expect(row!.sign_count).toBe("7")
  })

  it("a failure of the caller's step rolls the counter update back (the challenge stays consumed)", async () => {
    const { authenticator, passkey } = await enrolled("rollback@example.com")
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    const error = await failureOf(
      app,
      passkeys((p) =>
        p.verifyAuthentication(scope, authenticator.get(options, { origin: origin(scope) }), () =>
          Effect.fail({ _tag: "CallerRefused" as const }),
        ),
      ),
    )
    expect(error).toEqual({ _tag: "CallerRefused" })
    const [row] = await query<{ sign_count: string; last_used_at: Date | null }>(
      app,
      "select sign_count::text, last_used_at from passkeys where id = $1",
      [passkey.id],
    )
    expect(row).toEqual({ sign_count: "0", last_used_at: null })
    expect(
      await count(
        app,
        "select count(*) as n from webauthn_challenges where transaction_id = $1 and consumed_at is null",
        [(scope.context as { transactionId: string }).transactionId],
      ),
    ).toBe(0)
  })

  it("a challenge of one context cannot be answered in another", async () => {
    const { authenticator } = await enrolled("context@example.com")
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    const other = { ...scope, context: freshContext() }
    expect(
      await failureOf(app, authenticate(other, authenticator.get(options, { origin: origin(scope) }))),
    ).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
  })
})

describe("origins and RP IDs (rule 5, RP migration)", () => {
  it("a Client's allowed_origins never widens the accepted origins", async () => {
    const clientId = await insertClient(app, boot, {
      id: randomId("cli"),
      type: "web_spa",
      allowedOrigins: ["https://spa.example.com"],
    })
    const { authenticator } = await enrolled("cors@example.com")
    const scope = await scopeOf(app, boot, { clientId })
    const options = await request(scope)
    expect(
      await failureOf(app, authenticate(scope, authenticator.get(options, { origin: "https://spa.example.com" }))),
    ).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
  })

  it("the HTTPS origin of the ceremony's RP ID is accepted", async () => {
    const { authenticator } = await enrolled("https-rp@example.com")
    const scope = await scopeOf(app, boot)
    const options = await request(scope)
    const verified = await app.run(
      authenticate(scope, authenticator.get(options, { origin: `https://${scope.urls.rpId}` })),
    )
    expect(verified.user.email).toBe("https-rp@example.com")
  })

  it("an active Custom Domain enabled as RP is an accepted origin; a pending one is not", async () => {
    const { authenticator } = await enrolled("custom@example.com")
    const active = `login-${randomId("d").slice(2, 10)}.example.com`
    const pending = `pending-${randomId("d").slice(2, 10)}.example.com`
    for (const [hostname, status] of [
      [active, "active"],
      [pending, "pending"],
    ]) {
      await query(
        app,
        `insert into domains (id, workspace_id, environment_id, hostname, rp_enabled, status, verification_token, created_at, updated_at)
        values ($1, $2, $3, $4, true, $5, 'token', now(), now())`,
        [randomId("dom"), boot.workspace_id, boot.environment_id, hostname, status],
      )
    }
    const port = `:${app.port}`
    let scope = await scopeOf(app, boot)
    // The RP ID is now the custom domain's (it became THE Interaction Domain); this credential
    // lives under the old one, so the ceremony names that RP ID explicitly through the legacy slot.
    await query(app, "update environments set legacy_rp_id = $2, active_rp_id = $3 where id = $1", [
      boot.environment_id,
      authenticator.credentials.values().next().value!.rpId,
      active,
    ])
    scope = await scopeOf(app, boot)
    const ok = await app.run(
      authenticate(
        scope,
        authenticator.get(await request(scope, { rp: "legacy" }), { origin: `http://${active}${port}` }),
      ),
    )
    expect(ok.user.email).toBe("custom@example.com")
    scope = await scopeOf(app, boot)
    expect(
      await failureOf(
        app,
        authenticate(
          scope,
          authenticator.get(await request(scope, { rp: "legacy" }), { origin: `http://${pending}${port}` }),
        ),
      ),
    ).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
    await query(app, "update environments set legacy_rp_id = null, active_rp_id = null where id = $1", [
      boot.environment_id,
    ])
    await query(app, "delete from domains where environment_id = $1", [boot.environment_id])
  })

  it("rp legacy runs the ceremony under the legacy RP ID until disable-legacy", async () => {
    const { authenticator, user } = await enrolled("legacy@example.com")
    const oldRpId = (await environment(app, boot.environment_id)).urls.rpId
    await query(app, "update environments set active_rp_id = 'login.example.com', legacy_rp_id = $2 where id = $1", [
      boot.environment_id,
      oldRpId,
    ])
    let scope = await scopeOf(app, boot)
    expect((await request(scope)).rpId).toBe("login.example.com")
    // the active RP ID does not match the credential's
    const credentialId = [...authenticator.credentials.keys()][0]!
    expect(
      await failureOf(
        app,
        authenticate(
          scope,
          authenticator.get(await request(scope), { origin: origin(scope), rpId: oldRpId, credentialId }),
        ),
      ),
    ).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
    scope = await scopeOf(app, boot)
    const legacyOptions = await request(scope, { rp: "legacy" })
    expect(legacyOptions.rpId).toBe(oldRpId)
    const ok = await app.run(authenticate(scope, authenticator.get(legacyOptions, { origin: `https://${oldRpId}` })))
    expect(ok.user.id).toBe(user.id)
    await query(app, "update environments set legacy_rp_disabled_at = now() where id = $1", [boot.environment_id])
    scope = await scopeOf(app, boot)
    expect(
      await failureOf(
        app,
        passkeys((p) => p.requestOptions(scope, { rp: "legacy" })),
      ),
    ).toMatchObject({ _tag: "InvalidRequest" })
    await query(
      app,
      "update environments set active_rp_id = null, legacy_rp_id = null, legacy_rp_disabled_at = null where id = $1",
      [boot.environment_id],
    )
  })

  it("native rp_id: only for react_native clients, and only the Environment's RP ID or the app's universal_link_host", async () => {
    const web = await insertClient(app, boot, { id: randomId("cli"), type: "web_spa" })
    const native = await insertClient(app, boot, {
      id: randomId("cli"),
      type: "react_native",
      mobileApp: {
        app_scheme: "com.example.app",
        universal_link_host: "links.example.com",
        android_sha256_fingerprints: [],
      },
    })
    const user = await createUser(app, boot, "native-rp@example.com")
    const webScope = await scopeOf(app, boot, { clientId: web })
    expect(
      await failureOf(
        app,
        passkeys((p) => p.creationOptions(webScope, user, { rp_id: webScope.urls.rpId })),
      ),
    ).toMatchObject({ _tag: "InvalidRequest" })
    const nativeScope = await scopeOf(app, boot, { clientId: native })
    expect((await creation(nativeScope, user, { rp_id: "links.example.com" })).rp.id).toBe("links.example.com")
    expect((await creation(nativeScope, user, { rp_id: nativeScope.urls.rpId })).rp.id).toBe(nativeScope.urls.rpId)
    expect(
      await failureOf(
        app,
        passkeys((p) => p.creationOptions(nativeScope, user, { rp_id: "other.example.com" })),
      ),
    ).toMatchObject({ _tag: "InvalidRequest" })
    // a passkey registered under the app's RP ID from the iOS app (origin https://<rp id>)
    const authenticator = new SoftwareAuthenticator()
    const options = await creation(nativeScope, user, { rp_id: "links.example.com" })
    const passkey = await app.run(
      register(nativeScope, user, authenticator.create(options, { origin: "https://links.example.com" })),
    )
    expect(passkey.rp_id).toBe("links.example.com")
    const loginScope = await scopeOf(app, boot, { clientId: native })
    const ok = await app.run(
      authenticate(
        loginScope,
        authenticator.get(await request(loginScope, { rp_id: "links.example.com" }), {
          origin: "https://links.example.com",
        }),
      ),
    )
    expect(ok.user.id).toBe(user.id)
  })

  it("Android: the apk-key-hash origin of a registered signing certificate is accepted for that react_native client only", async () => {
    const fingerprint = Array.from({ length: 32 }, (_, i) =>
      ((i * 7) % 256).toString(16).padStart(2, "0").toUpperCase(),
    ).join(":")
    const expected = `android:apk-key-hash:${Buffer.from(fingerprint.replace(/:/g, ""), "hex").toString("base64url")}`
    expect(androidOrigin(fingerprint)).toBe(expected)
    const native = await insertClient(app, boot, {
      id: randomId("cli"),
      type: "react_native",
      mobileApp: {
        app_scheme: "com.example.droid",
        android_package_name: "com.example.droid",
        android_sha256_fingerprints: [fingerprint],
      },
    })
    const other = await insertClient(app, boot, {
      id: randomId("cli"),
      type: "react_native",
      mobileApp: { android_sha256_fingerprints: [] },
    })
    const { authenticator } = await enrolled("android@example.com")
    const scope = await scopeOf(app, boot, { clientId: native })
    const ok = await app.run(authenticate(scope, authenticator.get(await request(scope), { origin: expected })))
    expect(ok.user.email).toBe("android@example.com")
    const otherScope = await scopeOf(app, boot, { clientId: other })
    expect(
      await failureOf(
        app,
        authenticate(otherScope, authenticator.get(await request(otherScope), { origin: expected })),
      ),
    ).toMatchObject({ _tag: "WebAuthnVerificationFailed" })
  })
})

describe("housekeeping", () => {
  it("deletes consumed and expired challenges, keeps open ones", async () => {
    const user = await createUser(app, boot, "sweep@example.com")
    const consumed = await scopeOf(app, boot)
    await creation(consumed, user)
    await failureOf(
      app,
      register(consumed, user, {
        id: "AA",
        rawId: "AA",
        type: "public-key",
        response: { clientDataJSON: "AA", attestationObject: "AA" },
      }),
    )
    const expiring = await scopeOf(app, boot)
    await request(expiring)
    await app.advance("5 minutes")
    const open = await scopeOf(app, boot)
    await request(open)
    const ids = [consumed, expiring, open].map((s) => (s.context as { transactionId: string }).transactionId)
    await app.run(sweepPasskeys(new Date(app.now())))
    const left = await query<{ transaction_id: string }>(
      app,
      "select transaction_id from webauthn_challenges where transaction_id = any($1)",
      [ids],
    )
    expect(left.map((r) => r.transaction_id)).toEqual([ids[2]])
  })
})
