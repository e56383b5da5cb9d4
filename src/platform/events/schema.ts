import { Schema } from "effect"

// The spec's Events section, table "Payloads": one strict schema per type.
// `onExcessProperty: "error"` at decode time makes "no additional properties" a rule.

const NonEmpty = Schema.String.check(Schema.isMinLength(1))
const UserId = Schema.String.check(Schema.isPattern(/^usr_[a-z2-7]{32}$/))
const SessionId = Schema.String.check(Schema.isPattern(/^ses_[a-z2-7]{32}$/))
const ClientId = Schema.String.check(Schema.isPattern(/^cli_[a-z2-7]{32}$/))
const IdentityId = Schema.String.check(Schema.isPattern(/^idn_[a-z2-7]{32}$/))
const PasskeyId = Schema.String.check(Schema.isPattern(/^psk_[a-z2-7]{32}$/))
const DeliveryId = Schema.String.check(Schema.isPattern(/^dlv_[a-z2-7]{32}$/))
/** Asterisks on both sides of the @; the full address is never present. */
const MaskedEmail = Schema.String.check(Schema.isPattern(/^[^@\s]*\*[^@\s]*@[^@\s]*\*[^@\s]*$/))
const IpPrefixHash = Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/))
const Provider = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))
const LoginMethod = Schema.Literals(["email_otp", "passkey", "social"])
const SessionMethod = Schema.Literals(["email_otp", "passkey", "social", "refresh_token"])
const Aaguid = Schema.String.check(
  Schema.isPattern(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/),
)
const MaxSafe = 9007199254740991

export const EventPayloads = {
  "user.created": Schema.Struct({ userId: UserId, method: LoginMethod, maskedEmail: Schema.optionalKey(MaskedEmail) }),
  "user.updated": Schema.Struct({ userId: UserId, changedFields: Schema.NonEmptyArray(NonEmpty) }),
  "user.deleted": Schema.Struct({
    userId: UserId,
    reason: Schema.optionalKey(Schema.Literals(["user_request", "admin_action"])),
  }),
  "user.blocked": Schema.Struct({
    userId: UserId,
    reason: Schema.optionalKey(Schema.Literals(["admin_action", "abuse_detection"])),
  }),
  "identity.linked": Schema.Struct({ userId: UserId, identityId: IdentityId, provider: Provider }),
  "identity.unlinked": Schema.Struct({ userId: UserId, identityId: IdentityId, provider: Provider }),
  "passkey.created": Schema.Struct({
    userId: UserId,
    passkeyId: PasskeyId,
    aaguid: Schema.optionalKey(Aaguid),
    backedUp: Schema.optionalKey(Schema.Boolean),
  }),
  "passkey.deleted": Schema.Struct({ userId: UserId, passkeyId: PasskeyId }),
  "session.created": Schema.Struct({
    userId: UserId,
    sessionId: SessionId,
    method: SessionMethod,
    clientId: Schema.optionalKey(ClientId),
    ipPrefixHash: Schema.optionalKey(IpPrefixHash),
  }),
  "session.revoked": Schema.Struct({
    userId: UserId,
    sessionId: SessionId,
    reason: Schema.Literals(["user_logout", "admin_revocation", "refresh_token_reuse", "session_expired"]),
  }),
  "login.succeeded": Schema.Struct({
    userId: UserId,
    sessionId: SessionId,
    method: SessionMethod,
    clientId: Schema.optionalKey(ClientId),
    ipPrefixHash: Schema.optionalKey(IpPrefixHash),
  }),
  "login.failed": Schema.Struct({
    userId: Schema.optionalKey(UserId),
    method: SessionMethod,
    reason: Schema.Literals([
      "invalid_code",
      "expired_code",
      "passkey_verification_failed",
      "social_provider_error",
      "user_blocked",
      "email_suppressed",
    ]),
    clientId: Schema.optionalKey(ClientId),
    maskedEmail: Schema.optionalKey(MaskedEmail),
    ipPrefixHash: Schema.optionalKey(IpPrefixHash),
  }),
  "email.delivery.bounced": Schema.Struct({
    deliveryId: DeliveryId,
    recipientHash: Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_-]{43}$/)),
    messageId: Schema.optionalKey(NonEmpty),
    bounceType: Schema.Literals(["hard", "soft"]),
  }),
  "mau.threshold_reached": Schema.Struct({
    billingMonth: Schema.String.check(Schema.isPattern(/^\d{4}-(0[1-9]|1[0-2])$/)),
    thresholdPercent: Schema.Literals([80, 95, 100]),
    currentMau: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MaxSafe })),
    freeTierLimit: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MaxSafe })),
  }),
} as const

export type EventType = keyof typeof EventPayloads
export const EVENT_TYPES = Object.keys(EventPayloads) as ReadonlyArray<EventType>
export type EventPayload<T extends EventType> = (typeof EventPayloads)[T]["Type"]

export const ActorSchema = Schema.Struct({
  type: Schema.Literals(["end_user", "workspace_member", "api_key", "system"]),
  id: Schema.optionalKey(NonEmpty),
})

/** The envelope of the spec: no field outside this list is allowed. */
export const EnvelopeBase = {
  eventId: Schema.String.check(Schema.isPattern(/^evt_[a-z2-7]{32}$/)),
  version: Schema.Literal(1),
  occurredAt: Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)),
  workspaceId: NonEmpty,
  environmentId: Schema.optionalKey(NonEmpty),
  actor: Schema.optionalKey(ActorSchema),
  trace: Schema.Struct({ requestId: Schema.optionalKey(NonEmpty), correlationId: Schema.optionalKey(NonEmpty) }),
}

export const Envelope = Schema.Union(
  EVENT_TYPES.map((type) =>
    Schema.Struct({ ...EnvelopeBase, type: Schema.Literal(type), payload: EventPayloads[type] }),
  ),
)
export type Envelope = typeof Envelope.Type

export const strict = { onExcessProperty: "error" } as const

/** Masks an address as the payloads require: `a***@e***.com`. */
export const maskEmail = (email: string): string => {
  const at = email.lastIndexOf("@")
  const local = email.slice(0, at)
  const domain = email.slice(at + 1)
  const dot = domain.lastIndexOf(".")
  const name = dot > 0 ? domain.slice(0, dot) : domain
  const tld = dot > 0 ? domain.slice(dot) : ""
  return `${local.slice(0, 1)}***@${name.slice(0, 1)}***${tld}`
}
