import { Effect } from "effect"
import { NotFound } from "../http/errors.js"
import { route } from "../http/route.js"
import { Config } from "../platform/config.js"
import { Mailer } from "../platform/mailer.js"
import { escapeHtml, htmlPage } from "./page.js"

/** How many of the newest messages the page shows. */
const SHOWN = 20

/**
 * Local development without SMTP (`npm start` runs server and worker in one process): the
 * development mailer's messages, codes included, on a page of the Interaction Domain, so
 * the Hosted Login can be tried at once. It exists only when every public host is
 * localhost (`PUBLIC_SCHEME` http is refused for anything else), `NODE_ENV` is not
 * production and `SMTP_URL` is unset; otherwise 404.
 */
export const devMailboxEnabled = Effect.gen(function* () {
  const config = yield* Config
  const mailer = yield* Mailer
  return !config.production && config.publicScheme === "http" && mailer.kind === "dev"
})

const mailbox = Effect.gen(function* () {
  if (!(yield* devMailboxEnabled)) return yield* new NotFound({})
  const mailer = yield* Mailer
  const messages = mailer.sent().slice(-SHOWN).reverse()
  const items = messages.map((m) => `<li><p><strong>${escapeHtml(m.to)}</strong>: ${escapeHtml(m.subject)}</p><pre>${escapeHtml(m.text)}</pre></li>`)
  return htmlPage("Development mailbox", `<main id="dev-mailbox" class="card">
  <h1>Development mailbox</h1>
  <p class="muted">Messages kept in memory by the development mailer (no SMTP_URL). Newest first; reload for new ones.</p>
  ${items.length === 0 ? "<p>No messages yet.</p>" : `<ol>${items.join("")}</ol>`}
</main>`)
})

export const DEV_MAILBOX_PATH = "/login/dev-mailbox"

export const devMailboxRoutes = [route("GET", DEV_MAILBOX_PATH, mailbox)]
