import { Effect, Schema } from "effect"
import { addJob, TASKS } from "../../platform/jobs.js"
import { Crypto, type SealContext } from "../../platform/crypto.js"
import { maskEmail } from "../../platform/events/schema.js"
import { Mailer } from "../../platform/mailer.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * The graphile-worker task that tells the old address of an email change
 * (TASKS.sendEmailChangeNotice; src/operator/master-key reads its name).
 */
export const SEND_EMAIL_CHANGE_NOTICE_TASK = TASKS.sendEmailChangeNotice.name

/** Spec, /me rule 3: "the old address gets a change notice". Addresses travel sealed, never in clear text. */
const Sealed = Schema.Struct({ to: Schema.String, new_email: Schema.String })

export const sealContext = (userId: string, securityVersion: number): SealContext => ({
  purpose: "email-change-notice",
  table: "users",
  rowId: `${userId}:${securityVersion}`,
})

/** Enqueued in the switch's SQL transaction: the notice exists iff the change commits. */
export const enqueueEmailChangeNotice = Effect.fnUntraced(function* (n: {
  environmentId: string
  userId: string
  securityVersion: number
  oldEmail: string
  newEmail: string
}) {
  const crypto = yield* Crypto
  const sealed = yield* crypto.seal(
    sealContext(n.userId, n.securityVersion),
    JSON.stringify({ to: n.oldEmail, new_email: n.newEmail }),
  )
  yield* addJob(TASKS.sendEmailChangeNotice, {
    environment_id: n.environmentId,
    user_id: n.userId,
    security_version: n.securityVersion,
    sealed,
  })
})

/** The new address is masked: the notice may reach someone who no longer controls the account. */
export const emailChangeNoticeMessage = (to: string, newEmail: string) => ({
  to,
  subject: "The email address of your account was changed",
  text:
    `The email address of your account was changed to ${maskEmail(newEmail)}. This address will no longer be used to sign in.\n\n` +
    "If you did not make this change, contact the support of the service you use right away.\n",
})

export const sendEmailChangeNotice = Effect.fnUntraced(
  function* (payload: unknown) {
    const job = yield* Schema.decodeUnknownEffect(TASKS.sendEmailChangeNotice.payload)(payload)
    const crypto = yield* Crypto
    const opened = yield* crypto.open(sealContext(job.user_id, job.security_version), job.sealed)
    const content = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(Sealed))(opened.toString("utf8"))
    yield* (yield* Mailer).send(emailChangeNoticeMessage(content.to, content.new_email))
  },
  Effect.orDie,
  withCallSpan("jobs.sendEmailChangeNotice"),
)
