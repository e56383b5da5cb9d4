import { Context, Effect, Layer, Schema } from "effect"
import { createTransport } from "nodemailer"
import { type AppConfig, Config, publicPortSuffix } from "./config.js"
import { maskEmail } from "./events/schema.js"
import { withCallSpan } from "./observability/span.js"

export interface MailMessage {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html?: string | undefined
  /** Our own Message-ID (`<dlv_...@PLATFORM_DOMAIN>`, src/bounces), so a bounce can name it. */
  readonly messageId?: string | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The Environment it is for: the development mailer's log line names that Environment's mailbox. */
  readonly environmentId?: string | undefined
}

export interface SentMail extends MailMessage {
  readonly from: string
  readonly messageId: string
}

export class MailerError extends Schema.TaggedError<MailerError>()("MailerError", {
  /** What went wrong, without the message content (it may hold a code). */
  reason: Schema.String,
}) {}

/**
 * Outgoing mail (docs/architecture.md, Shape: platform services). With `SMTP_URL` set, messages go through
 * nodemailer's SMTP transport; without it, a development mailer keeps them in memory and
 * logs one line per message naming the masked recipient and the subject, never the body
 * (OTP codes live there).
 */
/** What the transport said: the Message-ID, and the SMTP server's final reply (SMTP only). */
export interface MailSent {
  readonly messageId: string
  /** e.g. `250 Ok 0100018c...-000000` from Amazon SES, which names its own message id (src/bounces). */
  readonly response?: string | undefined
}

export class Mailer extends Context.Service<
  Mailer,
  {
    readonly send: (message: MailMessage) => Effect.Effect<MailSent, MailerError>
    /** Messages kept by the development mailer (empty with SMTP). */
    readonly sent: () => ReadonlyArray<SentMail>
    readonly kind: "smtp" | "dev"
  }
>()("platform/Mailer") {}

/** Where the development mailbox page is served, on every Interaction Domain (src/hosted-login/dev-mailbox.ts). */
export const DEV_MAILBOX_PATH = "/login/dev-mailbox"

/**
 * The development mailbox of an Environment's default Interaction Domain (its id, or a
 * `<environment_id>` placeholder), for the start banner and the dev mailer's log line.
 * The host is `env-<id without env_>.login.{PLATFORM_DOMAIN}` (src/tenancy/urls.ts).
 */
export const devMailboxUrl = (config: AppConfig, environmentId?: string) =>
  `${config.publicScheme}://env-${environmentId === undefined ? "<environment_id>" : environmentId.replace(/^env_/, "")}.login.${config.platformDomain}${publicPortSuffix(config)}${DEV_MAILBOX_PATH}`

/** The development mailer keeps at most this many messages (oldest dropped first). */
const DEV_MAILBOX_LIMIT = 1000

/** `mailbox` names the page showing a message kept for an Environment (undefined: none is served). */
export const makeDevMailer = (from: string, mailbox?: (environmentId: string | undefined) => string) => {
  const box: Array<SentMail> = []
  let counter = 0
  return Mailer.of({
    kind: "dev",
    sent: () => box.slice(),
    send: (message) =>
      Effect.gen(function* () {
        counter += 1
        const messageId = message.messageId ?? `<dev-${counter}@authservice.local>`
        box.push({ ...message, from, messageId })
        if (box.length > DEV_MAILBOX_LIMIT) box.shift()
        yield* Effect.logInfo("dev mailer: message kept in memory (set SMTP_URL to deliver)", {
          to: maskEmail(message.to),
          subject: message.subject,
          ...(mailbox === undefined ? {} : { mailbox: mailbox(message.environmentId) }),
        })
        return { messageId }
      }),
  })
}

/**
 * SMTP through a pool of connections kept open between messages (nodemailer's pool), at most
 * `maxConnections` at once: a message then costs MAIL FROM, RCPT TO and DATA, not also a TCP
 * (and TLS) connect, EHLO and QUIT, which were most of the worker's CPU per login code
 * (docs/decisions/performance.md, "Email OTP login"). `maxConnections` is the worker's job
 * concurrency, so no job waits for a connection that a send per job would have had. Options
 * in SMTP_URL's query (`pool=false`, `maxConnections=`, `maxMessages=`) take precedence.
 */
export const makeSmtpMailer = (smtpUrl: string, from: string, maxConnections = 5) => {
  const transport = createTransport({ url: smtpUrl, pool: true, maxConnections })
  const mailer = Mailer.of({
    kind: "smtp",
    sent: () => [],
    send: (message) =>
      Effect.tryPromise({
        try: () =>
          transport.sendMail({
            from,
            to: message.to,
            subject: message.subject,
            text: message.text,
            ...(message.html !== undefined ? { html: message.html } : {}),
            ...(message.messageId !== undefined ? { messageId: message.messageId } : {}),
            ...(message.headers !== undefined ? { headers: { ...message.headers } } : {}),
          }),
        // The transport's error text names the server's reply, never our message body.
        catch: (e) => new MailerError({ reason: e instanceof Error ? e.message : "SMTP delivery failed" }),
      }).pipe(
        Effect.map(
          (info): MailSent => ({
            messageId: String(info.messageId ?? ""),
            response: typeof info.response === "string" ? info.response : undefined,
          }),
        ),
        withCallSpan("Mailer.send"),
      ),
  })
  return { ...mailer, close: () => transport.close() }
}

export const MailerLive = Layer.effect(
  Mailer,
  Effect.gen(function* () {
    const config = yield* Config
    return config.smtpUrl === undefined
      ? makeDevMailer(
          config.mailFrom,
          // The page exists only outside production over local http (src/hosted-login/dev-mailbox.ts).
          !config.production && config.publicScheme === "http" ? (id) => devMailboxUrl(config, id) : undefined,
        )
      : yield* Effect.acquireRelease(
          Effect.sync(() => makeSmtpMailer(config.smtpUrl!, config.mailFrom, config.workerConcurrency)),
          // The pool's open connections are closed (QUIT) when the process stops.
          (mailer) => Effect.sync(() => mailer.close()),
        )
  }),
)

/**
 * A production server or worker without SMTP_URL would run the development mailer: every
 * message, login codes included, kept in that process's memory and never delivered (the dev
 * mailbox page is off in production), so no one could sign in by Email OTP. Refused at start
 * unless MAIL_ALLOW_DEV_MAILER says it is meant (decisions: Production operation). Operator
 * commands send no mail and are not refused.
 */
export const devMailerRefusal = (
  config: Pick<AppConfig, "production" | "smtpUrl" | "allowDevMailer">,
): string | undefined =>
  config.production && config.smtpUrl === undefined && !config.allowDevMailer
    ? "SMTP_URL is required when NODE_ENV=production (without it the development mailer keeps every mail, login codes included, in memory and delivers none); set SMTP_URL, or MAIL_ALLOW_DEV_MAILER=true to start without mail delivery"
    : undefined

/** Logged once at start when MAIL_ALLOW_DEV_MAILER lets a production process run without SMTP. */
export const DEV_MAILER_IN_PRODUCTION_WARNING =
  "SMTP_URL is unset and MAIL_ALLOW_DEV_MAILER=true: mail (login codes included) is kept in memory and not delivered"
