import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import type { InvalidRequest } from "../http/errors.js"
import { Audit } from "../platform/audit.js"
import { Config } from "../platform/config.js"
import { Crypto, sha256Hex } from "../platform/crypto.js"
import { Events } from "../platform/events/service.js"
import { Ids } from "../platform/ids.js"
import { ipPrefixHash } from "../platform/ip-prefix.js"
import { type Actor, CurrentRequest } from "../platform/request-context.js"
import type { EnvironmentRecord, EnvironmentUrls } from "../tenancy/schema.js"
import type { UserRow } from "../users/repo.js"
import { userById } from "../users/repo.js"
import * as challenges from "./challenges/repo.js"
import { WebAuthnVerificationFailed } from "./errors.js"
import { acceptedOrigins } from "./origins.js"
import * as repo from "./repo.js"
import { chooseRpId, type RpRequest } from "./rp.js"
import type { AuthenticationCredential, RegistrationCredential } from "./schema.js"
import * as webauthn from "./webauthn.js"
import { withCallSpan } from "../platform/observability/span.js"

// The passkey ceremonies (spec: "Passkey (WebAuthn)"), independent of where they are driven
// from: a login transaction or a `/me` session. Callers pass the ceremony's scope; this
// service issues options with single-use challenges, verifies responses, stores passkeys
// and records the events and audit of each outcome.

/** Who may answer a challenge: the login transaction, or the login session behind a /me token. */
export type CeremonyContext =
  | { readonly kind: "transaction"; readonly transactionId: string }
  | { readonly kind: "session"; readonly sessionId: string }

export interface CeremonyScope {
  readonly env: EnvironmentRecord
  readonly urls: EnvironmentUrls
  readonly context: CeremonyContext
  /** The Client the ceremony runs for (native RP IDs and Android origins), when known. */
  readonly clientId: string | null
  readonly actor?: Actor | undefined
}

const contextKey = (c: CeremonyContext) => (c.kind === "transaction" ? `txn:${c.transactionId}` : `ses:${c.sessionId}`)

export interface VerifiedAssertion {
  readonly user: UserRow
  readonly passkey: repo.PasskeyRow
}

export class Passkeys extends Context.Service<
  Passkeys,
  {
    /**
     * Creation options for `user` (spec, Passkey rule 2), with a new challenge that replaces any
     * open registration challenge of the same context. Run inside the caller's transaction.
     */
    readonly creationOptions: (
      scope: CeremonyScope,
      user: UserRow,
      request: { readonly rp_id?: string | undefined },
    ) => Effect.Effect<webauthn.CreationOptionsJSON, InvalidRequest, SqlClient.SqlClient>
    /**
     * Verifies an attestation and stores the passkey for `user` (`passkey.created` + audit).
     * Must run OUTSIDE any SQL transaction: the challenge is consumed by a statement of its own,
     * which stays committed when verification fails (spec, Passkey rule 4).
     */
    readonly verifyRegistration: (
      scope: CeremonyScope,
      user: UserRow,
      input: {
        readonly credential: RegistrationCredential
        readonly name?: string | undefined
      },
    ) => Effect.Effect<repo.PasskeyRow, WebAuthnVerificationFailed>
    /** Request options (spec, Passkey rule 3); run inside the caller's transaction. */
    readonly requestOptions: (
      scope: CeremonyScope,
      request: RpRequest & { readonly email?: string | undefined },
    ) => Effect.Effect<webauthn.RequestOptionsJSON, InvalidRequest, SqlClient.SqlClient>
    /**
     * Verifies an assertion. On success the counter is recorded and `onVerified` runs in the same
     * SQL transaction (a failure of `onVerified` rolls both back). On failure the challenge stays
     * consumed, `login.failed` (reason `passkey_verification_failed`) and an audit record are
     * committed, and nothing else changes. Must run OUTSIDE any SQL transaction.
     */
    readonly verifyAuthentication: <A, E, R>(
      scope: CeremonyScope,
      credential: AuthenticationCredential,
      onVerified: (verified: VerifiedAssertion) => Effect.Effect<A, E, R>,
    ) => Effect.Effect<A, WebAuthnVerificationFailed | E, Exclude<R, SqlClient.SqlClient>>
  }
>()("passkeys/Passkeys") {}

export const PasskeysLive = Layer.effect(
  Passkeys,
  Effect.gen(function* () {
    const config = yield* Config
    const crypto = yield* Crypto
    const ids = yield* Ids
    const events = yield* Events
    const audit = yield* Audit
    const sql = yield* SqlClient.SqlClient
    const withSql = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, SqlClient.SqlClient, sql)
    const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const clientOf = (env: EnvironmentRecord, clientId: string | null) =>
      clientId === null ? Effect.succeed(undefined) : withSql(repo.ceremonyClient(env.id, clientId)).pipe(Effect.orDie)

    const originsFor = Effect.fnUntraced(function* (scope: CeremonyScope, rpId: string, clientId: string | null) {
      const client = yield* clientOf(scope.env, clientId)
      const rpEnabledDomains = yield* withSql(repo.rpEnabledCustomDomains(scope.env.id)).pipe(Effect.orDie)
      return acceptedOrigins({ config, urls: scope.urls, rpId, rpEnabledDomains, client })
    })

    const issueChallenge = Effect.fnUntraced(function* (
      scope: CeremonyScope,
      ceremony: challenges.Ceremony,
      rpId: string,
      userId: string | null,
    ) {
      const challenge = yield* crypto.randomBytes(32)
      const now = yield* Clock.currentTimeMillis
      yield* challenges
        .putChallenge({
          id: yield* ids.make("chl"),
          workspaceId: scope.env.workspaceId,
          environmentId: scope.env.id,
          ceremony,
          contextKey: contextKey(scope.context),
          transactionId: scope.context.kind === "transaction" ? scope.context.transactionId : null,
          sessionId: scope.context.kind === "session" ? scope.context.sessionId : null,
          clientId: scope.clientId,
          userId,
          rpId,
          challengeHash: sha256Hex(Buffer.from(challenge).toString("base64url")),
          now: new Date(now),
          expiresAt: new Date(now + webauthn.CEREMONY_TIMEOUT_MS),
        })
        .pipe(Effect.orDie)
      return challenge
    })

    /**
     * Consumes the context's open challenge (committed on its own: a failed attempt burns it),
     * then checks it was issued for this ceremony and has not expired.
     */
    const consume = Effect.fnUntraced(function* (scope: CeremonyScope, ceremony: challenges.Ceremony) {
      const now = yield* nowDate
      const row = yield* withSql(
        challenges.consumeChallenge(scope.env.id, contextKey(scope.context), ceremony, now),
      ).pipe(Effect.orDie)
      if (!row) return yield* new WebAuthnVerificationFailed({ detail: "No open challenge: request new options" })
      if (row.expires_at.getTime() <= now.getTime()) {
        return yield* new WebAuthnVerificationFailed({ detail: "The challenge has expired: request new options" })
      }
      return row
    })

    const requestIpHash = Effect.fnUntraced(function* (workspaceId: string) {
      const request = yield* CurrentRequest
      return ipPrefixHash(crypto, workspaceId, request?.ip)
    })

    const creationOptions = Effect.fnUntraced(function* (
      scope: CeremonyScope,
      user: UserRow,
      request: { readonly rp_id?: string | undefined },
    ) {
      const client = yield* clientOf(scope.env, scope.clientId)
      const rpId = yield* chooseRpId({ env: scope.env, urls: scope.urls, client, request, ceremony: "registration" })
      const existing = yield* repo.passkeysOfUser(scope.env.id, user.id).pipe(Effect.orDie)
      const challenge = yield* issueChallenge(scope, "registration", rpId, user.id)
      return yield* webauthn.creationOptions({
        rpId,
        rpName: scope.env.name,
        userHandle: user.user_handle,
        userName: user.email,
        userDisplayName: user.name ?? user.email,
        challenge,
        exclude: existing
          .filter((p) => p.rp_id === rpId)
          .map((p) => ({ credentialId: p.credential_id, transports: p.transports })),
      })
    }, withCallSpan("Passkeys.creationOptions"))

    const verifyRegistration = (
      scope: CeremonyScope,
      user: UserRow,
      input: {
        readonly credential: RegistrationCredential
        readonly name?: string | undefined
      },
    ) => {
      const actor = scope.actor ?? { type: "end_user" as const, id: user.id }
      const attempt = Effect.gen(function* () {
        const challenge = yield* consume(scope, "registration")
        if (challenge.user_id !== user.id) {
          return yield* new WebAuthnVerificationFailed({ detail: "The challenge was issued for another user" })
        }
        const origins = yield* originsFor(scope, challenge.rp_id, challenge.client_id)
        const info = yield* webauthn.verifyAttestation({
          credential: input.credential,
          challengeHash: challenge.challenge_hash,
          origins,
          rpId: challenge.rp_id,
        })
        const now = yield* nowDate
        const passkeyId = yield* ids.make("psk")
        const transports = (input.credential.response.transports ?? []).filter((t) => KNOWN_TRANSPORTS.has(t))
        return yield* dieOnSqlError(
          withSql(
            sql.withTransaction(
              Effect.gen(function* () {
                const row = yield* repo
                  .insertPasskey({
                    id: passkeyId,
                    workspaceId: scope.env.workspaceId,
                    environmentId: scope.env.id,
                    userId: user.id,
                    credentialId: info.credential.id,
                    publicKey: info.credential.publicKey,
                    signCount: info.credential.counter,
                    transports,
                    aaguid: info.aaguid,
                    backedUp: info.credentialBackedUp,
                    deviceType: info.credentialDeviceType === "multiDevice" ? "multi_device" : "single_device",
                    rpId: challenge.rp_id,
                    userHandle: user.user_handle,
                    name: input.name ?? null,
                    now,
                  })
                  .pipe(Effect.orDie)
                if (!row)
                  return yield* new WebAuthnVerificationFailed({ detail: "This credential is already registered" })
                yield* events.emit({
                  type: "passkey.created",
                  workspaceId: scope.env.workspaceId,
                  environmentId: scope.env.id,
                  actor,
                  payload: {
                    userId: user.id,
                    passkeyId: row.id,
                    aaguid: info.aaguid,
                    backedUp: info.credentialBackedUp,
                  },
                })
                yield* audit.append({
                  workspaceId: scope.env.workspaceId,
                  environmentId: scope.env.id,
                  actor,
                  action: "passkey.created",
                  subjectType: "passkey",
                  subjectId: row.id,
                  details: {
                    user_id: user.id,
                    rp_id: row.rp_id,
                    device_type: row.device_type,
                    backed_up: row.backed_up,
                    via: scope.context.kind,
                  },
                })
                return row
              }),
            ),
          ),
        )
      })
      return attempt.pipe(
        Effect.tapError((error) =>
          withSql(
            audit.append({
              workspaceId: scope.env.workspaceId,
              environmentId: scope.env.id,
              actor,
              action: "passkey.registration_failed",
              subjectType: "user",
              subjectId: user.id,
              result: "failure",
              details: { reason: error.detail ?? "verification failed" },
            }),
          ),
        ),
        withCallSpan("Passkeys.verifyRegistration"),
      )
    }

    const requestOptions = Effect.fnUntraced(function* (
      scope: CeremonyScope,
      request: RpRequest & { readonly email?: string | undefined },
    ) {
      const client = yield* clientOf(scope.env, scope.clientId)
      const rpId = yield* chooseRpId({ env: scope.env, urls: scope.urls, client, request, ceremony: "authentication" })
      // `email` is accepted but never looked up: the options are the same whether or not the
      // address or its credentials exist (docs/decisions/passkeys.md).
      const challenge = yield* issueChallenge(scope, "authentication", rpId, null)
      return yield* webauthn.requestOptions({ rpId, challenge })
    }, withCallSpan("Passkeys.requestOptions"))

    const verifyAuthentication = <A, E, R>(
      scope: CeremonyScope,
      credential: AuthenticationCredential,
      onVerified: (verified: VerifiedAssertion) => Effect.Effect<A, E, R>,
    ) => {
      // The user the credential claims, once known: reported in login.failed.
      let claimedUserId: string | undefined
      const attempt = Effect.gen(function* () {
        const challenge = yield* consume(scope, "authentication")
        const passkey = yield* withSql(repo.passkeyByCredentialId(scope.env.id, credential.id)).pipe(Effect.orDie)
        if (!passkey) return yield* new WebAuthnVerificationFailed({ detail: "Unknown credential" })
        claimedUserId = passkey.user_id
        if (passkey.rp_id !== challenge.rp_id) {
          return yield* new WebAuthnVerificationFailed({ detail: "The credential belongs to another RP ID" })
        }
        // Discoverable login (allowCredentials is empty): the authenticator must name the user,
        // and it must be the user the credential was registered for (WebAuthn L3 7.2 step 6).
        const userHandle = credential.response.userHandle
        if (userHandle === undefined || userHandle === null || userHandle === "") {
          return yield* new WebAuthnVerificationFailed({ detail: "The response carries no user handle" })
        }
        if (!crypto.constantTimeEqual(userHandle, passkey.user_handle)) {
          return yield* new WebAuthnVerificationFailed({ detail: "The user handle does not match the credential" })
        }
        const origins = yield* originsFor(scope, challenge.rp_id, challenge.client_id)
        const info = yield* webauthn.verifyAssertion({
          credential,
          challengeHash: challenge.challenge_hash,
          origins,
          rpId: challenge.rp_id,
          publicKey: passkey.public_key,
        })
        // Sign counter (spec, Passkey rule 6): a synced (backed-up) passkey is never blocked by its
        // counter, which its copies cannot keep in step. A device-bound one whose counter does not
        // increase signals a cloned authenticator (WebAuthn L3 6.1.1) and is refused.
        const stored = Number(passkey.sign_count)
        const synced = passkey.backed_up || passkey.device_type === "multi_device" || info.credentialBackedUp
        if (!synced && (info.newCounter > 0 || stored > 0) && info.newCounter <= stored) {
          return yield* new WebAuthnVerificationFailed({ detail: "The signature counter did not increase" })
        }
        const now = yield* nowDate
        return yield* dieOnSqlError(
          withSql(
            sql.withTransaction(
              Effect.gen(function* () {
                const locked = yield* repo.lockPasskey(scope.env.id, passkey.id).pipe(Effect.orDie)
                if (!locked) return yield* new WebAuthnVerificationFailed({ detail: "Unknown credential" })
                const user = yield* userById(scope.env.id, passkey.user_id).pipe(Effect.orDie)
                if (!user || user.user_handle !== passkey.user_handle) {
                  return yield* new WebAuthnVerificationFailed({
                    detail: "The user handle does not match the credential",
                  })
                }
                yield* repo
                  .recordUse(scope.env.id, passkey.id, {
                    signCount: info.newCounter,
                    backedUp: info.credentialBackedUp,
                    now,
                  })
                  .pipe(Effect.orDie)
                const updated: repo.PasskeyRow = {
                  ...locked,
                  sign_count: String(info.newCounter),
                  backed_up: info.credentialBackedUp,
                  last_used_at: now,
                }
                return yield* onVerified({ user, passkey: updated })
              }),
            ),
          ),
        )
      })
      return attempt.pipe(
        Effect.tapError((error) =>
          error instanceof WebAuthnVerificationFailed ? recordLoginFailure(scope, claimedUserId, error) : Effect.void,
        ),
        withCallSpan("Passkeys.verifyAuthentication"),
      ) as Effect.Effect<A, WebAuthnVerificationFailed | E, Exclude<R, SqlClient.SqlClient>>
    }

    /** spec Events: login.failed with reason passkey_verification_failed, plus an audit record. */
    const recordLoginFailure = Effect.fnUntraced(
      function* (scope: CeremonyScope, userId: string | undefined, error: WebAuthnVerificationFailed) {
        const ipHash = yield* requestIpHash(scope.env.workspaceId)
        const actor = userId === undefined ? { type: "end_user" as const } : { type: "end_user" as const, id: userId }
        yield* events.emit({
          type: "login.failed",
          workspaceId: scope.env.workspaceId,
          environmentId: scope.env.id,
          actor,
          payload: {
            method: "passkey",
            reason: "passkey_verification_failed",
            ...(userId === undefined ? {} : { userId }),
            ...(scope.clientId === null ? {} : { clientId: scope.clientId }),
            ...(ipHash === undefined ? {} : { ipPrefixHash: ipHash }),
          },
        })
        yield* audit.append({
          workspaceId: scope.env.workspaceId,
          environmentId: scope.env.id,
          actor,
          action: "login.failed",
          subjectType: userId === undefined ? undefined : "user",
          subjectId: userId,
          result: "failure",
          details: {
            method: "passkey",
            reason: "passkey_verification_failed",
            detail: error.detail ?? null,
            client_id: scope.clientId,
          },
        })
      },
      sql.withTransaction,
      withSql,
      Effect.orDie,
    )

    return Passkeys.of({ creationOptions, verifyRegistration, requestOptions, verifyAuthentication })
  }),
)

/** Database failures are defects (500), so the typed failures stay meaningful. */
const dieOnSqlError = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError.SqlError>, R> =>
  effect.pipe(
    Effect.catch((e) => (SqlError.isSqlError(e) ? Effect.die(e) : Effect.fail(e as Exclude<E, SqlError.SqlError>))),
  )

/** Transports of WebAuthn L3 (AuthenticatorTransport); anything else a client sends is dropped. */
const KNOWN_TRANSPORTS = new Set(["usb", "nfc", "ble", "smart-card", "hybrid", "internal"])
