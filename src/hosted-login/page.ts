import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { HttpServerResponse } from "effect/http"

/**
 * Response headers of every Hosted Login page (docs/architecture.md: strict CSP without inline script,
 * `frame-ancestors 'none'`, `Referrer-Policy: no-referrer`, `Cache-Control: no-store`).
 * Script and styles are separate files of the same origin; the page calls only its own
 * origin's Public API (`connect-src 'self'`).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ")

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
}

/**
 * The Hosted Login stylesheet, for pages that load nothing (another host's pages, failures
 * answered without the Environment): inlined, and admitted by the CSP by its hash alone.
 */
export const INLINE_STYLE = readFileSync(new URL("./assets/login.css", import.meta.url), "utf8")
const INLINE_STYLE_HASH = `'sha256-${createHash("sha256").update(INLINE_STYLE).digest("base64")}'`
export const INLINE_STYLE_PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...PAGE_HEADERS,
  "content-security-policy": `default-src 'none'; style-src ${INLINE_STYLE_HASH}; form-action 'none'; base-uri 'none'; frame-ancestors 'none'`,
}

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ENTITIES[c]!)

const SCRIPTS = `
<script src="/login/assets/passkey.js" defer></script>
<script src="/login/assets/social.js" defer></script>
<script src="/login/assets/login.js" defer></script>`

/** A page's document; its style is the stylesheet at `stylesheet`, or `inlineStyle` itself. */
export const layout = (
  title: string,
  body: string,
  head: { readonly stylesheet: string; readonly scripts: string } | { readonly inlineStyle: string },
) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
${"inlineStyle" in head ? `<style>${head.inlineStyle}</style>` : `<link rel="stylesheet" href="${escapeHtml(head.stylesheet)}">${head.scripts}`}
</head>
<body>
${body}
</body>
</html>
`

export const htmlPage = (title: string, body: string, status = 200) =>
  HttpServerResponse.text(layout(title, body, { stylesheet: "/login/assets/login.css", scripts: SCRIPTS }), {
    status,
    contentType: "text/html; charset=utf-8",
    headers: PAGE_HEADERS,
  })

/**
 * The sign-in page of one transaction. The script reads the transaction and client from
 * `data-` attributes, loads `/v1/config` and renders one control per available method
 * it knows (the hook where passkey and social buttons are added). The `iss` of the
 * authorization response (RFC 9207) comes from the `complete` answer, as for a custom UI.
 */
export const loginPage = (p: {
  transactionId: string
  clientId: string
  clientName: string
  status: string
  /** The masked email of this browser's Hosted Login session (./sso.ts): the page offers "Continue as" it. */
  continueAsEmail?: string | undefined
}) =>
  htmlPage(
    "Sign in",
    `<main id="login" class="card"
  data-transaction-id="${escapeHtml(p.transactionId)}" data-client-id="${escapeHtml(p.clientId)}" data-status="${escapeHtml(p.status)}"${
    p.continueAsEmail === undefined ? "" : ` data-continue-as="${escapeHtml(p.continueAsEmail)}"`
  }>
  <h1>Sign in</h1>
  <p class="subtitle">to continue to <strong>${escapeHtml(p.clientName)}</strong></p>
  <p id="status" class="status" role="status" aria-live="polite"></p>
  <p id="error" class="error" role="alert" hidden></p>
  <div id="methods" aria-busy="true"><p class="muted">Loading…</p></div>
  <p id="legal" class="legal" hidden></p>
  <noscript><p class="error">JavaScript is required to sign in.</p></noscript>
</main>`,
  )

/**
 * What each error of the Hosted Login says: `text` to the person signing in, and, for the
 * authorization request's client rule failures, `rule` to the developer of the client, naming
 * the rule that was broken (docs/decisions/rp-libraries.md).
 */
export const ERROR_MESSAGES: Readonly<Record<string, { title: string; text: string; rule?: string }>> = {
  unknown_client: {
    title: "Unknown application",
    text: "The application that sent you here is not registered. Contact its owner.",
    rule: "client_id is not a registered client of this Environment: check the client_id and that the issuer URL names the right Environment.",
  },
  client_disabled: {
    title: "Application unavailable",
    text: "The application that sent you here is currently disabled.",
    rule: "This client is disabled: set its status to active in the Management API before signing users in.",
  },
  redirect_uri_mismatch: {
    title: "Invalid sign-in request",
    text: "The application asked to return you to an address it has not registered, so the sign-in was stopped.",
    rule: "redirect_uri must equal one of this client's registered redirect_uris byte for byte (same scheme, host, port, path and query; no trailing slash added). For safety the error is not sent to an unregistered address.",
  },
  scope_not_allowed: {
    title: "Invalid sign-in request",
    text: "The application asked for permissions it is not allowed to request.",
    rule: "This client asked for a scope that is not in its allowed_scopes: request only allowed scopes, or add the scope to the client.",
  },
  resource_not_allowed: {
    title: "Invalid sign-in request",
    text: "The application asked for access to a service it is not allowed to use.",
    rule: "Every resource parameter must be one of this client's allowed_resources (RFC 8707): remove it from the request, or register it on the client.",
  },
  nonce_required: {
    title: "Invalid sign-in request",
    text: "The application's sign-in request is incomplete (a nonce is required).",
    rule: "This client must send a nonce with scope openid: every authorization request that asks for openid needs a nonce parameter of 1 to 512 characters, whatever the client type (PKCE and state are required too).",
  },
  login_link_expired: {
    title: "Sign-in link expired",
    text: "This sign-in link was already used or has expired. Return to the application and start again.",
  },
  no_login_session: {
    title: "No sign-in in progress",
    text: "Your browser has no sign-in in progress here. Return to the application and start again.",
  },
  login_expired: {
    title: "Sign-in expired",
    text: "This sign-in took too long and has expired. Return to the application and start again.",
  },
  login_finished: {
    title: "Sign-in finished",
    text: "This sign-in is already finished or was cancelled. Return to the application to continue.",
  },
  social_other_browser: {
    title: "Different browser",
    text: "This sign-in was started in another browser. Return to the application in the browser where you started, or start again here.",
  },
}

/**
 * The error page. `back`, when given, is the client's redirect URI carrying the OAuth error
 * (src/hosted-login/error-return.ts): a plain link, so the person reads the page first and
 * the client then hears of the failure.
 */
export const errorPage = (code: string, back?: { readonly url: string; readonly clientName: string }) => {
  const known = ERROR_MESSAGES[code]
  const message = known ?? {
    title: "Sign-in error",
    text: "The sign-in request could not be processed. Return to the application and start again.",
  }
  const rule =
    message.rule === undefined
      ? ""
      : `
  <section class="developer" aria-label="For the developer">
    <h2>For the developer</h2>
    <p id="rule">${escapeHtml(message.rule)}</p>
  </section>`
  const link =
    back === undefined
      ? ""
      : `
  <p><a id="return-to-client" class="button" href="${escapeHtml(back.url)}">Return to ${escapeHtml(back.clientName)}</a></p>`
  return htmlPage(
    message.title,
    `<main id="login-error" class="card" data-error="${escapeHtml(known ? code : "unknown")}">
  <h1>${escapeHtml(message.title)}</h1>
  <p>${escapeHtml(message.text)}</p>${rule}${link}
</main>`,
    400,
  )
}
