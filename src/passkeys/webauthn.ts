import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server"
import { Effect } from "effect"
import { sha256Hex } from "../platform/crypto.js"
import { WebAuthnVerificationFailed } from "./errors.js"
import type { AuthenticationCredential, CreationOptions, RegistrationCredential } from "./schema.js"

// The WebAuthn protocol work, done by @simplewebauthn/server (docs/architecture.md: no hand-written
// version of what a listed library does). This file fixes the spec's parameters and
// maps the library's exceptions to our one typed failure.

/** ES256, EdDSA and RS256 (spec, Passkey rule 2 asks for ES256 and RS256 at least), most preferred first. */
export const SUPPORTED_ALGORITHMS = [-7, -8, -257]
/** How long the browser may take (WebAuthn recommends 300 s when user verification is required) = challenge lifetime. */
export const CEREMONY_TIMEOUT_MS = 300_000

export type CreationOptionsJSON = typeof CreationOptions.Type
export interface RequestOptionsJSON {
  readonly challenge: string
  readonly rpId: string
  readonly timeout: number
  readonly allowCredentials: ReadonlyArray<never>
  readonly userVerification: "required"
}

export const creationOptions = (input: {
  readonly rpId: string
  readonly rpName: string
  readonly userHandle: string
  readonly userName: string
  readonly userDisplayName: string
  readonly challenge: Uint8Array
  readonly exclude: ReadonlyArray<{ readonly credentialId: string; readonly transports: ReadonlyArray<string> }>
}) =>
  Effect.promise(() =>
    generateRegistrationOptions({
      rpName: input.rpName,
      rpID: input.rpId,
      // user.id: the opaque per-user handle (users.user_handle: 32 random bytes), never the email
      userID: new Uint8Array(Buffer.from(input.userHandle, "base64url")),
      userName: input.userName,
      userDisplayName: input.userDisplayName,
      challenge: new Uint8Array(input.challenge),
      timeout: CEREMONY_TIMEOUT_MS,
      attestationType: "none",
      excludeCredentials: input.exclude.map((c) => ({ id: c.credentialId, transports: [...c.transports] })),
      // Spec rule 2: both platform authenticators and security keys, so no authenticatorAttachment.
      authenticatorSelection: { residentKey: "required", userVerification: "required" },
      supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
    }),
  ).pipe(
    Effect.map(
      (o): CreationOptionsJSON => ({
        rp: { id: input.rpId, name: o.rp.name },
        user: o.user,
        challenge: o.challenge,
        pubKeyCredParams: o.pubKeyCredParams.map((p) => ({ alg: p.alg, type: "public-key" })),
        timeout: CEREMONY_TIMEOUT_MS,
        excludeCredentials: (o.excludeCredentials ?? []).map((c) => ({
          id: c.id,
          type: "public-key",
          ...(c.transports ? { transports: [...c.transports] } : {}),
        })),
        authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
        attestation: "none",
        // credProps asks the browser to say whether the credential is discoverable (WebAuthn L3 10.1.3)
        extensions: { credProps: true },
      }),
    ),
  )

/**
 * Request options: always discoverable (usernameless), so `allowCredentials` is empty whatever
 * the request says; supplying an email therefore reveals nothing (docs/decisions/passkeys.md).
 */
export const requestOptions = (input: { readonly rpId: string; readonly challenge: Uint8Array }) =>
  Effect.promise(() =>
    generateAuthenticationOptions({
      rpID: input.rpId,
      allowCredentials: [],
      challenge: new Uint8Array(input.challenge),
      timeout: CEREMONY_TIMEOUT_MS,
      userVerification: "required",
    }),
  ).pipe(
    Effect.map(
      (o): RequestOptionsJSON => ({
        challenge: o.challenge,
        rpId: input.rpId,
        timeout: CEREMONY_TIMEOUT_MS,
        allowCredentials: [],
        userVerification: "required",
      }),
    ),
  )

/** Short, non-secret reasons for the `detail` of 400 webauthn_verification_failed. */
export const describeFailure = (message: string): string => {
  if (/challenge/i.test(message)) return "The response does not answer the issued challenge"
  if (/top origin|cross-origin/i.test(message)) return "Cross-origin ceremonies are not accepted"
  if (/origin/i.test(message)) return "The origin is not accepted for this ceremony"
  if (/RP ID/i.test(message)) return "The RP ID does not match the ceremony's"
  if (/response type/i.test(message)) return "The client data type does not match the ceremony"
  if (/presen/i.test(message)) return "User presence is required"
  if (/verification/i.test(message)) return "User verification is required"
  if (/alg/i.test(message)) return "The credential's public key algorithm is not supported"
  if (/attestation/i.test(message)) return "The attestation statement is not acceptable"
  if (/backup/i.test(message)) return "The authenticator's backup flags are invalid"
  return "The passkey response could not be verified"
}

const failWith = (error: unknown) =>
  new WebAuthnVerificationFailed({ detail: describeFailure(error instanceof Error ? error.message : String(error)) })

/** The challenge is stored only as its SHA-256; the library calls this with the one in clientDataJSON. */
const challengeMatches = (challengeHash: string) => (challenge: string) => sha256Hex(challenge) === challengeHash

export const verifyAttestation = (input: {
  readonly credential: RegistrationCredential
  readonly challengeHash: string
  readonly origins: ReadonlyArray<string>
  readonly rpId: string
}) =>
  Effect.tryPromise({
    try: () =>
      verifyRegistrationResponse({
        response: input.credential as unknown as RegistrationResponseJSON,
        expectedChallenge: challengeMatches(input.challengeHash),
        expectedOrigin: [...input.origins],
        expectedRPID: input.rpId,
        expectedType: "webauthn.create",
        requireUserPresence: true,
        requireUserVerification: true,
        supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
      }),
    catch: failWith,
  }).pipe(
    Effect.flatMap((result) =>
      result.verified
        ? Effect.succeed(result.registrationInfo)
        : Effect.fail(new WebAuthnVerificationFailed({ detail: "The attestation could not be verified" })),
    ),
  )

export const verifyAssertion = (input: {
  readonly credential: AuthenticationCredential
  readonly challengeHash: string
  readonly origins: ReadonlyArray<string>
  readonly rpId: string
  readonly publicKey: Uint8Array
}) =>
  Effect.tryPromise({
    try: () =>
      verifyAuthenticationResponse({
        response: input.credential as AuthenticationResponseJSON,
        expectedChallenge: challengeMatches(input.challengeHash),
        expectedOrigin: [...input.origins],
        expectedRPID: input.rpId,
        expectedType: "webauthn.get",
        // The counter rule is ours (service.ts: synced passkeys are never blocked by it), so the
        // library is given no stored counter to compare against.
        credential: { id: input.credential.id, publicKey: new Uint8Array(input.publicKey), counter: 0 },
        requireUserVerification: true,
      }),
    catch: failWith,
  }).pipe(
    Effect.flatMap((result) =>
      result.verified
        ? Effect.succeed(result.authenticationInfo)
        : Effect.fail(new WebAuthnVerificationFailed({ detail: "The signature is invalid" })),
    ),
  )
