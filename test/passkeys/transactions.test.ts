import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { type SmtpSink, startSmtpSink } from "../login/support.js"
import { SoftwareAuthenticator } from "./support/authenticator.js"
import {
  completeAndExchange,
  type FlowClient,
  getTransaction,
  passkeyCall,
  publicApi,
  registerClient,
  startTransaction,
  type Transaction,
} from "./support/flow.js"
import { count, createUser, eventsOf, expectProblem, query } from "./support/helpers.js"

// The passkey routes of a login transaction, over HTTP on the Interaction Domain (spec:
// Passkey (WebAuthn) routes and rules 1-6; docs/architecture.md: transaction statuses).

let app: TestApp
let b: Bootstrapped
let client: FlowClient
let smtp: SmtpSink
let origin: string

beforeAll(async () => {
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
  client = await registerClient(app, b)
  origin = `http://${b.interaction_domain}`
})
afterAll(async () => {
  await app?.close()
  await smtp?.close()
})

const status = async (txn: string) => (await getTransaction(app, b, txn)).json.status as string

/** A transaction authenticated by a real Email OTP round trip (code read from the SMTP sink). */
const otpAuthenticated = async (email: string) => {
  const txn = await startTransaction(app, b, client)
  // Counted before the start: the worker may deliver the mail before the start's answer is read.
  const earlier = smtp.messagesTo(email).length
  const started = await publicApi(app, b, `/auth/transactions/${txn.id}/email/start`, { body: { email } })
  expect(started.status, started.text).toBe(202)
  const code = await smtp.waitForCode(email, earlier + 1)
  const verified = await publicApi(app, b, `/auth/transactions/${txn.id}/email/verify`, {
    body: { challenge_id: started.json.challenge_id, code },
  })
  expect(verified.status, verified.text).toBe(200)
  return txn
}

/**
 * A transaction marked authenticated for `userId` as Email OTP verify leaves it (a shortcut
 * for the tests of passkey rules; the OTP path itself is covered end to end above and in test/login).
 */
const authenticatedFor = async (userId: string) => {
  const txn = await startTransaction(app, b, client)
  await query(
    app,
    `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
    where id = $1`,
    [txn.id, userId, new Date(app.now())],
  )
  return txn
}

/** A user with a passkey registered through the transaction routes. */
const enrolled = async (email: string, options: ConstructorParameters<typeof SoftwareAuthenticator>[0] = {}) => {
  const user = await createUser(app, b, email)
  const txn = await authenticatedFor(user.id)
  const authenticator = new SoftwareAuthenticator(options)
  const opts = await passkeyCall(app, b, txn.id, "registration/options", {})
  expect(opts.status, opts.text).toBe(200)
  const res = await passkeyCall(app, b, txn.id, "registration/verify", {
    credential: authenticator.create(opts.json, { origin }),
  })
  expect(res.status, res.text).toBe(200)
  return { user, authenticator, passkeyId: res.json.passkey_id as string }
}

/** A new transaction with authentication options issued. */
const loginOptions = async (body: unknown = {}): Promise<{ txn: Transaction; options: any }> => {
  const txn = await startTransaction(app, b, client)
  const res = await passkeyCall(app, b, txn.id, "authentication/options", body)
  expect(res.status, res.text).toBe(200)
  return { txn, options: res.json }
}

describe("end to end: Email OTP, register a passkey, then sign in with the passkey alone", () => {
  it("amr [passkey] and acr phishing-resistant in the tokens", async () => {
    const email = `e2e-${Date.now()}@example.com`
    const first = await otpAuthenticated(email)
    const authenticator = new SoftwareAuthenticator({ backupEligible: true, backedUp: true })
    const options = await passkeyCall(app, b, first.id, "registration/options")
    expect(options.status, options.text).toBe(200)
    expect(options.headers["cache-control"]).toBe("no-store")
    const registered = await passkeyCall(app, b, first.id, "registration/verify", {
      credential: authenticator.create(options.json, { origin }),
      name: "My phone",
    })
    expect(registered.status, registered.text).toBe(200)
    expect(registered.json).toMatchObject({
      name: "My phone",
      backed_up: true,
      device_type: "multi_device",
      transaction_id: first.id,
      status: "authenticated",
    })
    expect(registered.json.passkey_id).toMatch(/^psk_[a-z2-7]{32}$/)
    for (const secret of ["credential_id", "public_key", "sign_count", "user_handle"])
      expect(registered.json).not.toHaveProperty(secret)
    const firstTokens = await completeAndExchange(app, b, client, first)
    expect(firstTokens.access).toMatchObject({ amr: ["email_otp"], acr: "urn:example-auth:loa:basic" })

    const { txn, options: request } = await loginOptions({})
    expect(await status(txn.id)).toBe("challenge_issued")
    const verified = await passkeyCall(app, b, txn.id, "authentication/verify", {
      credential: authenticator.get(request, { origin }),
    })
    expect(verified.status, verified.text).toBe(200)
    expect(verified.json).toEqual({ transaction_id: txn.id, status: "authenticated" })
    expect((await getTransaction(app, b, txn.id)).json).toMatchObject({ status: "authenticated", method: "passkey" })
    const { access, id } = await completeAndExchange(app, b, client, txn)
    expect(access).toMatchObject({
      sub: firstTokens.access.sub,
      amr: ["passkey"],
      acr: "urn:example-auth:loa:phishing-resistant",
    })
    expect(id).toMatchObject({
      sub: firstTokens.access.sub,
      amr: ["passkey"],
      acr: "urn:example-auth:loa:phishing-resistant",
      nonce: txn.nonce,
    })
    const succeeded = (await eventsOf(app, b.environment_id, "login.succeeded")).at(-1)
    expect(succeeded.payload).toMatchObject({ userId: firstTokens.access.sub, method: "passkey" })
  })
})

describe("registration (rules 1 and 2; registration never changes a transaction's status)", () => {
  it("needs an authenticated transaction: 409 transaction_not_authenticated before, nothing changes", async () => {
    const txn = await startTransaction(app, b, client)
    expectProblem(await passkeyCall(app, b, txn.id, "registration/options", {}), 409, "transaction_not_authenticated")
    expect(await status(txn.id)).toBe("created")
    await passkeyCall(app, b, txn.id, "authentication/options", {})
    expectProblem(await passkeyCall(app, b, txn.id, "registration/options"), 409, "transaction_not_authenticated")
    expect(await status(txn.id)).toBe("challenge_issued")
    expect(
      await count(
        app,
        "select count(*) as n from webauthn_challenges where transaction_id = $1 and ceremony = 'registration'",
        [txn.id],
      ),
    ).toBe(0)
  })

  it("needs a fresh authentication: more than 5 minutes after it, 403 reauthentication_required", async () => {
    const user = await createUser(app, b, "stale@example.com")
    const txn = await authenticatedFor(user.id)
    const opts = await passkeyCall(app, b, txn.id, "registration/options", {})
    expect(opts.status).toBe(200)
    await app.advance("5 minutes")
    await app.advance("1 second")
    expectProblem(await passkeyCall(app, b, txn.id, "registration/options", {}), 403, "reauthentication_required")
    expectProblem(
      await passkeyCall(app, b, txn.id, "registration/verify", {
        credential: new SoftwareAuthenticator().create(opts.json, { origin }),
      }),
      403,
      "reauthentication_required",
    )
    expect(await count(app, "select count(*) as n from passkeys where user_id = $1", [user.id])).toBe(0)
    expect(await status(txn.id)).toBe("authenticated")
  })

  it("creation options over HTTP: user.id is the opaque handle, excludeCredentials lists existing passkeys", async () => {
    const { user, authenticator } = await enrolled("http-options@example.com")
    const txn = await authenticatedFor(user.id)
    const res = await passkeyCall(app, b, txn.id, "registration/options", {})
    expect(res.status).toBe(200)
    expect(res.json.user).toEqual({ id: user.user_handle, name: user.email, displayName: user.email })
    expect(res.json.rp.id).toBe(b.interaction_domain.replace(/:\d+$/, ""))
    expect(res.json.excludeCredentials.map((c: { id: string }) => c.id)).toEqual([...authenticator.credentials.keys()])
    expect(res.json.authenticatorSelection).toEqual({
      residentKey: "required",
      requireResidentKey: true,
      userVerification: "required",
    })
    expect(res.json.attestation).toBe("none")
    expect(await status(txn.id)).toBe("authenticated")
  })

  it("a failed registration: 400 webauthn_verification_failed, challenge consumed, status unchanged, nothing stored", async () => {
    const user = await createUser(app, b, "reg-fail@example.com")
    const txn = await authenticatedFor(user.id)
    const opts = await passkeyCall(app, b, txn.id, "registration/options", {})
    const authenticator = new SoftwareAuthenticator()
    expectProblem(
      await passkeyCall(app, b, txn.id, "registration/verify", {
        credential: authenticator.create(opts.json, { origin: "https://evil.example" }),
      }),
      400,
      "webauthn_verification_failed",
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "registration/verify", {
        credential: authenticator.create(opts.json, { origin }),
      }),
      400,
      "webauthn_verification_failed",
    )
    expect(await status(txn.id)).toBe("authenticated")
    expect(await count(app, "select count(*) as n from passkeys where user_id = $1", [user.id])).toBe(0)
  })

  it("refuses a malformed body with 400 invalid_request_body, and rp_id from a web client with 400 invalid_request", async () => {
    const user = await createUser(app, b, "reg-body@example.com")
    const txn = await authenticatedFor(user.id)
    expectProblem(await passkeyCall(app, b, txn.id, "registration/verify", {}), 400, "invalid_request_body")
    expectProblem(
      await passkeyCall(app, b, txn.id, "registration/verify", {
        credential: { id: "x", rawId: "x", type: "public-key", response: {} },
      }),
      400,
      "invalid_request_body",
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "registration/options", { rp_id: b.interaction_domain.replace(/:\d+$/, "") }),
      400,
      "invalid_request",
    )
    expectProblem(await passkeyCall(app, b, txn.id, "registration/options", "not json"), 400, "invalid_request_body")
  })

  it("passkeys registered here appear in the Management API's user passkey list", async () => {
    const { user, passkeyId } = await enrolled("mgmt-list@example.com")
    const res = await app.management(`/v1/users/${user.id}/passkeys?environment_id=${b.environment_id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.map((p: { passkey_id: string }) => p.passkey_id)).toEqual([passkeyId])
    expect(JSON.stringify(res.json)).not.toMatch(/credential_id|public_key|sign_count/)
  })
})

describe("authentication options (rule 3; challenge_issued)", () => {
  it("an empty object or an empty body: discoverable options, the transaction moves to challenge_issued", async () => {
    for (const body of [{}, undefined]) {
      const txn = await startTransaction(app, b, client)
      const res = await passkeyCall(app, b, txn.id, "authentication/options", body)
      expect(res.status, res.text).toBe(200)
      expect(res.json).toEqual({
        challenge: expect.any(String),
        rpId: b.interaction_domain.replace(/:\d+$/, ""),
        timeout: 300_000,
        allowCredentials: [],
        userVerification: "required",
      })
      expect(await status(txn.id)).toBe("challenge_issued")
    }
  })

  it("email does not reveal whether the address or its credentials exist", async () => {
    const { user } = await enrolled("has-passkey@example.com")
    await createUser(app, b, "no-passkey-http@example.com")
    const bodies = [
      { email: user.email },
      { email: "no-passkey-http@example.com" },
      { email: "unknown-http@example.com" },
    ]
    const answers = []
    for (const body of bodies) {
      const { options } = await loginOptions(body)
      answers.push({ ...options, challenge: typeof options.challenge })
    }
    expect(answers[0]).toEqual(answers[1])
    expect(answers[1]).toEqual(answers[2])
  })

  it("rp and rp_id together, rp legacy without a legacy RP ID, unknown fields: refused, status unchanged", async () => {
    const txn = await startTransaction(app, b, client)
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/options", { rp: "active", rp_id: "x.example.com" }),
      400,
      "invalid_request",
    )
    expectProblem(await passkeyCall(app, b, txn.id, "authentication/options", { rp: "legacy" }), 400, "invalid_request")
    // Wrong shape (a value outside the rp enum, a wrong type, an unknown field): invalid_request_body.
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/options", { rp: "other" }),
      400,
      "invalid_request_body",
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/options", { email: ["a@example.com"] }),
      400,
      "invalid_request_body",
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/options", { allowCredentials: [] }),
      400,
      "invalid_request_body",
    )
    // A well-typed value that breaks a rule (email syntax, RP ID form): invalid_request.
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/options", { email: "not an email" }),
      400,
      "invalid_request",
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/options", { rp_id: "Not A Host" }),
      400,
      "invalid_request",
    )
    expect(await status(txn.id)).toBe("interaction_started")
  })

  it("rp legacy runs under the legacy RP ID until disable-legacy", async () => {
    const { authenticator, user } = await enrolled("legacy-http@example.com")
    const rpId = b.interaction_domain.replace(/:\d+$/, "")
    await query(app, "update environments set active_rp_id = 'login.example.com', legacy_rp_id = $2 where id = $1", [
      b.environment_id,
      rpId,
    ])
    try {
      await app.advance("6 seconds") // the Environment cache (5 s) picks up the change
      const { txn, options } = await loginOptions({ rp: "legacy" })
      expect(options.rpId).toBe(rpId)
      const res = await passkeyCall(app, b, txn.id, "authentication/verify", {
        credential: authenticator.get(options, { origin }),
      })
      expect(res.status, res.text).toBe(200)
      expect(
        (await query<{ user_id: string }>(app, "select user_id from auth_transactions where id = $1", [txn.id]))[0]!
          .user_id,
      ).toBe(user.id)
      await query(app, "update environments set legacy_rp_disabled_at = now() where id = $1", [b.environment_id])
      await app.advance("6 seconds")
      const later = await startTransaction(app, b, client)
      expectProblem(
        await passkeyCall(app, b, later.id, "authentication/options", { rp: "legacy" }),
        400,
        "invalid_request",
      )
    } finally {
      await query(
        app,
        "update environments set active_rp_id = null, legacy_rp_id = null, legacy_rp_disabled_at = null where id = $1",
        [b.environment_id],
      )
      await app.advance("6 seconds")
    }
  })

  it("an authenticated transaction cannot start passkey authentication: 409 invalid_transaction_state", async () => {
    const user = await createUser(app, b, "already@example.com")
    const txn = await authenticatedFor(user.id)
    expectProblem(await passkeyCall(app, b, txn.id, "authentication/options", {}), 409, "invalid_transaction_state")
    expect(await status(txn.id)).toBe("authenticated")
  })
})

describe("native apps (rule 5: rp_id, Android origin)", () => {
  it("a react_native client: rp_id of its universal_link_host, iOS origin https://<rp_id>, Android apk-key-hash origin", async () => {
    const fingerprint = Array.from({ length: 32 }, (_, i) =>
      ((i * 11) % 256).toString(16).padStart(2, "0").toUpperCase(),
    ).join(":")
    const androidOrigin = `android:apk-key-hash:${Buffer.from(fingerprint.replace(/:/g, ""), "hex").toString("base64url")}`
    const native = await registerClient(app, b, {
      client_type: "react_native",
      redirect_uris: ["com.example.app:/callback"],
      allowed_origins: [],
      mobile_app: {
        app_scheme: "com.example.app",
        ios_bundle_id: "com.example.app",
        ios_team_id: "ABCDE12345",
        android_package_name: "com.example.app",
        android_sha256_fingerprints: [fingerprint],
        universal_link_host: "links.example.com",
      },
    })
    const nativeClient = { client_id: native.client_id, redirect_uri: "com.example.app:/callback" }
    const user = await createUser(app, b, "native-http@example.com")
    const txn = await startTransaction(app, b, nativeClient)
    await query(
      app,
      `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
      where id = $1`,
      [txn.id, user.id, new Date(app.now())],
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "registration/options", { rp_id: "other.example.com" }),
      400,
      "invalid_request",
    )
    const options = await passkeyCall(app, b, txn.id, "registration/options", { rp_id: "links.example.com" })
    expect(options.status, options.text).toBe(200)
    expect(options.json.rp.id).toBe("links.example.com")
    const authenticator = new SoftwareAuthenticator()
    const registered = await passkeyCall(app, b, txn.id, "registration/verify", {
      credential: authenticator.create(options.json, { origin: "https://links.example.com" }),
    })
    expect(registered.status, registered.text).toBe(200)
    expect(registered.json.rp_id).toBe("links.example.com")

    const login = await startTransaction(app, b, nativeClient)
    const request = await passkeyCall(app, b, login.id, "authentication/options", { rp_id: "links.example.com" })
    expect(request.json.rpId).toBe("links.example.com")
    const verified = await passkeyCall(app, b, login.id, "authentication/verify", {
      credential: authenticator.get(request.json, { origin: androidOrigin }),
    })
    expect(verified.status, verified.text).toBe(200)
    // the web client's transactions never accept the app's origins
    const web = await startTransaction(app, b, client)
    expectProblem(
      await passkeyCall(app, b, web.id, "authentication/options", { rp_id: "links.example.com" }),
      400,
      "invalid_request",
    )
    const webOptions = await passkeyCall(app, b, web.id, "authentication/options", {})
    const credentialId = [...authenticator.credentials.keys()][0]!
    expectProblem(
      await passkeyCall(app, b, web.id, "authentication/verify", {
        credential: authenticator.get(webOptions.json, {
          origin: androidOrigin,
          credentialId,
          rpId: webOptions.json.rpId,
        }),
      }),
      400,
      "webauthn_verification_failed",
    )
  })
})

describe("authentication verify (rules 4 and 6)", () => {
  const refusals: Array<[string, (a: SoftwareAuthenticator, options: any) => unknown]> = [
    ["a wrong origin", (a, o) => a.get(o, { origin: "https://evil.example" })],
    [
      "a wrong RP ID",
      (a, o) => a.get(o, { origin, rpId: "evil.example", credentialId: [...a.credentials.keys()][0]! }),
    ],
    ["user presence off", (a, o) => a.get(o, { origin, up: false })],
    ["user verification off", (a, o) => a.get(o, { origin, uv: false })],
    ["a tampered signature", (a, o) => a.get(o, { origin, tamperSignature: true })],
    [
      "a user handle that does not match",
      (a, o) => a.get(o, { origin, userHandle: Buffer.alloc(32, 3).toString("base64url") }),
    ],
  ]
  for (const [name, make] of refusals) {
    it(`${name}: 400 webauthn_verification_failed, challenge consumed, status unchanged, login.failed`, async () => {
      const { user, authenticator, passkeyId } = await enrolled(`http-${name.replace(/\W+/g, "-")}@example.com`)
      const { txn, options } = await loginOptions()
      const before = (await eventsOf(app, b.environment_id, "login.failed")).length
      expectProblem(
        await passkeyCall(app, b, txn.id, "authentication/verify", { credential: make(authenticator, options) }),
        400,
        "webauthn_verification_failed",
      )
      expect(await status(txn.id)).toBe("challenge_issued")
      const failed = (await eventsOf(app, b.environment_id, "login.failed")).slice(before)
      expect(failed.map((e) => e.payload)).toEqual([
        expect.objectContaining({
          method: "passkey",
          reason: "passkey_verification_failed",
          userId: user.id,
          clientId: client.client_id,
          ipPrefixHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        }),
      ])
      expect(
        (
          await query<{ sign_count: string }>(app, "select sign_count::text from passkeys where id = $1", [passkeyId])
        )[0]!.sign_count,
      ).toBe("0")
      // the challenge is consumed: the genuine response is refused as well
      expectProblem(
        await passkeyCall(app, b, txn.id, "authentication/verify", {
          credential: authenticator.get(options, { origin }),
        }),
        400,
        "webauthn_verification_failed",
      )
      expect(await status(txn.id)).toBe("challenge_issued")
    })
  }

  it("a reused challenge after success is refused", async () => {
    const { authenticator } = await enrolled("http-reuse@example.com", { backupEligible: true, backedUp: true })
    const { txn, options } = await loginOptions()
    const credential = authenticator.get(options, { origin })
    expect((await passkeyCall(app, b, txn.id, "authentication/verify", { credential })).status).toBe(200)
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/verify", { credential }),
      400,
      "webauthn_verification_failed",
    )
    expect(await status(txn.id)).toBe("authenticated")
  })

  it("race: five concurrent verifies of one response, exactly one 200, the others 400 webauthn_verification_failed", async () => {
    const { authenticator } = await enrolled("http-race@example.com", { backupEligible: true, backedUp: true })
    const { txn, options } = await loginOptions()
    const credential = authenticator.get(options, { origin })
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map(() => passkeyCall(app, b, txn.id, "authentication/verify", { credential })),
    )
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1)
    const losers = answers.filter((r) => r.status !== 200)
    expect(losers.map((r) => [r.status, r.json.code])).toEqual(Array(4).fill([400, "webauthn_verification_failed"]))
    expect(await status(txn.id)).toBe("authenticated")
  })

  it("verify without options (no challenge): 400 webauthn_verification_failed", async () => {
    const { authenticator } = await enrolled("http-nochallenge@example.com")
    const txn = await startTransaction(app, b, client)
    const credential = authenticator.get(
      { challenge: Buffer.alloc(32).toString("base64url"), rpId: b.interaction_domain.replace(/:\d+$/, "") },
      { origin },
    )
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/verify", { credential }),
      400,
      "webauthn_verification_failed",
    )
    expect(await status(txn.id)).toBe("created")
  })

  it("a blocked user's valid passkey: 403 access_denied and login.failed user_blocked; the transaction stays challenge_issued", async () => {
    const { user, authenticator } = await enrolled("http-blocked@example.com")
    await query(app, "update users set status = 'blocked' where id = $1", [user.id])
    const { txn, options } = await loginOptions()
    const before = (await eventsOf(app, b.environment_id, "login.failed")).length
    expectProblem(
      await passkeyCall(app, b, txn.id, "authentication/verify", {
        credential: authenticator.get(options, { origin }),
      }),
      403,
      "access_denied",
    )
    const failed = (await eventsOf(app, b.environment_id, "login.failed")).slice(before)
    expect(failed.map((e) => e.payload.reason)).toEqual(["user_blocked"])
    expect(await status(txn.id)).toBe("challenge_issued")
  })

  it("404 auth_transaction_not_found for an unknown transaction; 410 after 10 minutes", async () => {
    expectProblem(
      await passkeyCall(app, b, "txn_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "authentication/options", {}),
      404,
      "auth_transaction_not_found",
    )
    const txn = await startTransaction(app, b, client)
    await app.advance("10 minutes")
    expectProblem(await passkeyCall(app, b, txn.id, "authentication/options", {}), 410, "auth_transaction_expired")
  })
})
