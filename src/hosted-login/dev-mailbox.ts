import { BlockList, isIPv4 } from "node:net"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { NotFound } from "../http/errors.js"
import { route } from "../http/route.js"
import { Config } from "../platform/config.js"
import { DEV_MAILBOX_PATH, Mailer } from "../platform/mailer.js"
import { normalizeIp } from "../platform/trust-proxy.js"
import { escapeHtml, htmlPage } from "./page.js"

/** How many of the newest messages the page shows. */
const SHOWN = 20

/**
 * Local development without SMTP (`npm start` runs server and worker in one process): the
 * development mailer's messages, codes included, on a page of the Interaction Domain, so
 * the Hosted Login can be tried at once. It exists only when every public host is
 * localhost (`PUBLIC_SCHEME` http is refused for anything else), `NODE_ENV` is not
 * production and `SMTP_URL` is unset, and only for callers on this machine; otherwise 404.
 */
export const devMailboxEnabled = Effect.gen(function* () {
  const config = yield* Config
  const mailer = yield* Mailer
  return !config.production && config.publicScheme === "http" && mailer.kind === "dev"
})

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4")
LOOPBACK.addAddress("::1", "ipv6")

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (how a dual-stack socket reports 127.0.0.1). */
export const isLoopbackAddress = (address: string | undefined) => {
  const ip = address === undefined ? undefined : normalizeIp(address)
  return ip !== undefined && LOOPBACK.check(ip, isIPv4(ip) ? "ipv4" : "ipv6")
}

/**
 * The mailbox shows every code sent: only a caller on this machine may read it (docs/decisions/rate-limits-and-caches.md).
 * The socket peer decides, never a header; a request a proxy forwarded (X-Forwarded-For or
 * Forwarded present) is refused even from a local proxy, whose callers may be anyone.
 */
const callerIsLocal = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const peer = request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined
  const forwarded = request.headers["x-forwarded-for"] !== undefined || request.headers["forwarded"] !== undefined
  return isLoopbackAddress(peer) && !forwarded
})

const mailbox = Effect.gen(function* () {
  // 404 either way: a remote caller learns nothing about whether the page exists.
  if (!(yield* devMailboxEnabled) || !(yield* callerIsLocal)) return yield* new NotFound({})
  const mailer = yield* Mailer
  const messages = mailer.sent().slice(-SHOWN).reverse()
  const items = messages.map(
    (m) =>
      `<li><p><strong>${escapeHtml(m.to)}</strong>: ${escapeHtml(m.subject)}</p><pre>${escapeHtml(m.text)}</pre></li>`,
  )
  return htmlPage(
    "Development mailbox",
    `<main id="dev-mailbox" class="card">
  <h1>Development mailbox</h1>
  <p class="muted">Messages kept in memory by the development mailer (no SMTP_URL). Newest first; reload for new ones.</p>
  ${items.length === 0 ? "<p>No messages yet.</p>" : `<ol>${items.join("")}</ol>`}
</main>`,
  )
})

export const devMailboxRoutes = [route("GET", DEV_MAILBOX_PATH, mailbox)]
