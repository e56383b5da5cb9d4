import { Effect, Schema } from "effect"
import type { Statement } from "effect/sql"
import { Crypto, type SealContext } from "../../platform/crypto.js"
import { Mailer } from "../../platform/mailer.js"
import { addJob, TASKS } from "../../platform/jobs.js"
import { countWith } from "../../platform/observability/metrics.js"
import { isCurrentGeneration } from "./repo.js"
import { recordProviderReply, trackDelivery } from "../../bounces/deliveries.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** The graphile-worker task that mails login codes (TASKS.sendLoginCode; src/operator/master-key reads its name). */
export const SEND_LOGIN_CODE_TASK = TASKS.sendLoginCode.name

// The job payload never holds the code or the address in clear text: both are sealed
// (AES-256-GCM under the master key, bound to this challenge generation). Every start and
// resend enqueues the same job shape; for a suppressed address `deliver` is false inside
// the seal and the job sends nothing (docs/architecture.md: no enumeration by side effects).

/** What the code is for; absent means a sign-in code (jobs enqueued before email change existed). */
export const CodePurpose = Schema.Literals(["login", "email_change_old", "email_change_new"])
export type CodePurpose = typeof CodePurpose.Type

const Sealed = Schema.Struct({
  to: Schema.String,
  code: Schema.String,
  deliver: Schema.Boolean,
  purpose: Schema.optionalKey(CodePurpose),
})

export const sealContext = (challengeId: string, generation: number): SealContext => ({
  purpose: "email-otp-mail",
  table: "email_challenges",
  rowId: `${challengeId}:${generation}`,
})

/** Enqueues the mail job in the caller's SQL transaction (it exists iff the transaction commits). */
export const enqueueLoginCodeMail = (m: {
  environmentId: string
  challengeId: string
  generation: number
  to: string
  code: string
  deliver: boolean
  purpose?: CodePurpose
  /** CTEs written in the enqueuing statement (the start's audit record): one round trip for both. */
  with?: Statement.Fragment | undefined
}) =>
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const sealed = yield* crypto.seal(
      sealContext(m.challengeId, m.generation),
      JSON.stringify({
        to: m.to,
        code: m.code,
        deliver: m.deliver,
        ...(m.purpose === undefined ? {} : { purpose: m.purpose }),
      }),
    )
    yield* addJob(
      TASKS.sendLoginCode,
      {
        environment_id: m.environmentId,
        challenge_id: m.challengeId,
        generation: m.generation,
        sealed,
      },
      { with: m.with },
    )
  })

export const loginCodeMessage = (to: string, code: string) => ({
  to,
  subject: "Your sign-in code",
  text: `Your sign-in code is ${code}\n\nIt expires in 5 minutes. If you did not try to sign in, you can ignore this message.\n`,
})

/** Email change (spec: /me rule 3): one code proves the current address, the next the new one. */
export const emailChangeCodeMessage = (to: string, code: string, stage: "email_change_old" | "email_change_new") => ({
  to,
  subject: "Your code to change your email address",
  text:
    `Your confirmation code is ${code}\n\nIt expires in 5 minutes.\n` +
    (stage === "email_change_old"
      ? "Someone asked to change the email address of your account.\nIf this was not you, do not share the code; your address stays as it is.\n"
      : "Enter it to make this the email address of your account.\nIf you did not ask for this, you can ignore this message.\n"),
})

const messageFor = (purpose: CodePurpose | undefined, to: string, code: string) =>
  purpose === "email_change_old" || purpose === "email_change_new"
    ? emailChangeCodeMessage(to, code, purpose)
    : loginCodeMessage(to, code)

/** The task: open the seal, skip codes that were superseded meanwhile, send through the Mailer. */
export const sendLoginCode = Effect.fnUntraced(
  function* (payload: unknown) {
    const job = yield* Schema.decodeUnknownEffect(TASKS.sendLoginCode.payload)(payload)
    const crypto = yield* Crypto
    const mailer = yield* Mailer
    const opened = yield* crypto.open(sealContext(job.challenge_id, job.generation), job.sealed)
    const content = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(Sealed))(opened.toString("utf8"))
    if (!content.deliver) return yield* countWith((m) => m.otpSends.inc({ outcome: "suppressed" }))
    if (!(yield* isCurrentGeneration(job.environment_id, job.challenge_id, job.generation)))
      return yield* countWith((m) => m.otpSends.inc({ outcome: "superseded" }))
    // Tracked: a bounce names the delivery id and is tied to this Environment (src/bounces).
    const message = yield* trackDelivery(
      job.environment_id,
      content.purpose ?? "login_code",
      messageFor(content.purpose, content.to, content.code),
    )
    const sent = yield* mailer
      .send({ ...message, environmentId: job.environment_id })
      .pipe(Effect.tapError(() => countWith((m) => m.otpSends.inc({ outcome: "failed" }))))
    yield* countWith((m) => m.otpSends.inc({ outcome: "sent" }))
    // Sent: failing to note the provider's id must not fail the job (a retry would mail the code again).
    yield* recordProviderReply(message, sent.response).pipe(
      Effect.catch((e) =>
        Effect.logWarning("mail sent, but its provider message id was not recorded", { cause: String(e) }),
      ),
    )
  },
  Effect.orDie,
  withCallSpan("jobs.sendLoginCode"),
)
