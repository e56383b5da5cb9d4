import { Schema } from "effect"

// Wire schemas of the passkey ceremonies (spec: "Passkey (WebAuthn); binary values are
// Base64URL strings in JSON"). The credential shapes are those of
// PublicKeyCredential.toJSON() (WebAuthn Level 3), so a browser's output is accepted as is:
// the spec's fields plus the ones browsers add (`authenticatorAttachment`,
// `clientExtensionResults`, the assertion's `userHandle`).

/** Unpadded base64url (RFC 4648 section 5), bounded so a body cannot carry megabytes of it. */
const B64u = (max: number) => Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_-]*$/), Schema.isMaxLength(max))

/** A credential id is at most 1023 bytes (WebAuthn: credential ID) = 1364 base64url characters. */
const CredentialId = B64u(1364).check(Schema.isMinLength(1))
const ClientDataJSON = B64u(8192).check(Schema.isMinLength(1))
const Transports = Schema.Array(Schema.String.check(Schema.isMaxLength(32))).check(Schema.isMaxLength(10))
const ClientExtensionResults = Schema.Record(Schema.String, Schema.Unknown)
const AuthenticatorAttachment = Schema.NullOr(Schema.Literals(["platform", "cross-platform"]))

export const RegistrationCredential = Schema.Struct({
  id: CredentialId,
  rawId: CredentialId,
  type: Schema.Literal("public-key"),
  response: Schema.Struct({
    clientDataJSON: ClientDataJSON,
    attestationObject: B64u(65536).check(Schema.isMinLength(1)),
    transports: Schema.optionalKey(Transports),
    publicKey: Schema.optionalKey(B64u(8192)),
    publicKeyAlgorithm: Schema.optionalKey(Schema.Int),
    authenticatorData: Schema.optionalKey(B64u(65536)),
  }),
  authenticatorAttachment: Schema.optionalKey(AuthenticatorAttachment),
  clientExtensionResults: Schema.optionalKey(ClientExtensionResults),
})
export type RegistrationCredential = typeof RegistrationCredential.Type

export const AuthenticationCredential = Schema.Struct({
  id: CredentialId,
  rawId: CredentialId,
  type: Schema.Literal("public-key"),
  response: Schema.Struct({
    clientDataJSON: ClientDataJSON,
    authenticatorData: B64u(65536).check(Schema.isMinLength(1)),
    signature: B64u(8192).check(Schema.isMinLength(1)),
    /** The user handle of a discoverable credential (our login is discoverable: required at verify). */
    userHandle: Schema.optionalKey(Schema.NullOr(B64u(128))),
  }),
  authenticatorAttachment: Schema.optionalKey(AuthenticatorAttachment),
  clientExtensionResults: Schema.optionalKey(ClientExtensionResults),
})
export type AuthenticationCredential = typeof AuthenticationCredential.Type

/** An RP ID is a host name, never with a port (WebAuthn: RP ID is a valid domain string). */
export const RpIdString = Schema.String.check(
  Schema.isPattern(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/),
)

/** A passkey's label. */
export const PasskeyName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))

/** Creation options request: "no body; optional `rp_id` (Native only)". */
export const RegistrationOptionsBody = Schema.Struct({
  rp_id: Schema.optionalKey(RpIdString),
})
export type RegistrationOptionsBody = typeof RegistrationOptionsBody.Type

export const RegistrationVerifyBody = Schema.Struct({
  credential: RegistrationCredential,
  name: Schema.optionalKey(PasskeyName),
})
export type RegistrationVerifyBody = typeof RegistrationVerifyBody.Type

/**
 * Registration on a login transaction: the same bodies, plus the completion proof a custom-UI
 * social login must present to use its authenticated transaction (docs/decisions/social-login.md, Social
 * login: "Custom UI: the completion proof"; src/login/transactions/social-proof.ts).
 */
export const TransactionRegistrationOptionsBody = Schema.Struct({
  ...RegistrationOptionsBody.fields,
  social_proof: Schema.optionalKey(Schema.String),
})
export type TransactionRegistrationOptionsBody = typeof TransactionRegistrationOptionsBody.Type

export const TransactionRegistrationVerifyBody = Schema.Struct({
  ...RegistrationVerifyBody.fields,
  social_proof: Schema.optionalKey(Schema.String),
})
export type TransactionRegistrationVerifyBody = typeof TransactionRegistrationVerifyBody.Type

/** Spec: "optional `email`; optional `rp` (active / legacy) or `rp_id`, not both". */
export const AuthenticationOptionsBody = Schema.Struct({
  email: Schema.optionalKey(
    Schema.String.check(
      Schema.isMinLength(3),
      Schema.isMaxLength(254),
      Schema.isPattern(/^[^\s@]+@[^\s@]+$/, { message: "email must be an email address" }),
    ),
  ),
  rp: Schema.optionalKey(Schema.Literals(["active", "legacy"])),
  rp_id: Schema.optionalKey(RpIdString),
})
export type AuthenticationOptionsBody = typeof AuthenticationOptionsBody.Type

export const AuthenticationVerifyBody = Schema.Struct({
  credential: AuthenticationCredential,
})
export type AuthenticationVerifyBody = typeof AuthenticationVerifyBody.Type

/** Passkey summary: defined once, with the user (./present.ts re-exports its presenter). */
export { PasskeySummary } from "../users/passkey-summary.js"

// Options as returned (WebAuthn Level 3 JSON forms), described for the OpenAPI document.
const Descriptor = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("public-key"),
  transports: Schema.optionalKey(Schema.Array(Schema.String)),
})

export const CreationOptions = Schema.Struct({
  rp: Schema.Struct({ id: Schema.String, name: Schema.String }),
  user: Schema.Struct({ id: Schema.String, name: Schema.String, displayName: Schema.String }),
  challenge: Schema.String,
  pubKeyCredParams: Schema.Array(Schema.Struct({ alg: Schema.Int, type: Schema.Literal("public-key") })),
  timeout: Schema.Int,
  excludeCredentials: Schema.Array(Descriptor),
  authenticatorSelection: Schema.Struct({
    residentKey: Schema.Literal("required"),
    requireResidentKey: Schema.Boolean,
    userVerification: Schema.Literal("required"),
  }),
  attestation: Schema.Literal("none"),
  extensions: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  hints: Schema.optionalKey(Schema.Array(Schema.String)),
})

export const RequestOptions = Schema.Struct({
  challenge: Schema.String,
  rpId: Schema.String,
  timeout: Schema.Int,
  allowCredentials: Schema.Array(Descriptor),
  userVerification: Schema.Literal("required"),
})
