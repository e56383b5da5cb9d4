import { isIPv4 } from "node:net"
import { isBlockedIPv4, isBlockedIPv6 } from "./blocked-addresses.js"

/**
 * The webhook URL rules (spec: Events, Subscription rule 2): HTTPS, no userinfo, no
 * fragment, not a localhost-type host, not a blocked IP literal. The host is judged after
 * WHATWG URL parsing, which normalises every IPv4 spelling (`0x7f.1`, `2130706433`,
 * `017700000001`, `127.1` are all 127.0.0.1) and IPv6 literals. DNS is NOT resolved here:
 * names are checked again, on every resolved address, when a delivery connects.
 *
 * `allowPrivateTargets` (WEBHOOK_ALLOW_PRIVATE_TARGETS, refused in production) admits
 * `http` and private or loopback targets so a local receiver can be used in development.
 *
 * With guarded-lookup.ts and blocked-addresses.ts beside it, this is the outbound (SSRF) guard
 * of every server-side request to a URL that came from outside: webhook deliveries, user
 * import sources, social providers' endpoints.
 */

export const MAX_URL_LENGTH = 2048

export type UrlRefusal =
  | "invalid_url"
  | "too_long"
  | "scheme_not_https"
  | "userinfo"
  | "fragment"
  | "localhost"
  | "blocked_ip"

export type UrlVerdict =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly reason: UrlRefusal; readonly detail: string }

const refuse = (reason: UrlRefusal, detail: string): UrlVerdict => ({ ok: false, reason, detail })

/** Names that mean "this machine" whatever DNS says. */
const isLocalhostName = (hostname: string) => {
  const name = hostname.replace(/\.+$/, "")
  return (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    name === "localhost.localdomain" ||
    name === "ip6-localhost" ||
    name === "ip6-loopback"
  )
}

export const checkWebhookUrl = (raw: string, options: { readonly allowPrivateTargets: boolean }): UrlVerdict => {
  if (raw.length > MAX_URL_LENGTH) return refuse("too_long", `url must be at most ${MAX_URL_LENGTH} characters`)
  // The URL parser silently strips surrounding blanks and tabs/newlines inside: refuse them instead.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the rule
  if (/[\u0000-\u0020\u007f]/.test(raw))
    return refuse("invalid_url", "url must not contain spaces or control characters")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return refuse("invalid_url", "url must be an absolute URL")
  }
  const allowedSchemes = options.allowPrivateTargets ? ["https:", "http:"] : ["https:"]
  if (!allowedSchemes.includes(url.protocol)) return refuse("scheme_not_https", "url must use https")
  // WHATWG drops an empty userinfo (`https://@host/`) and an empty fragment (`https://host/#`):
  // look at the text too.
  const authority = raw.slice(raw.indexOf("//") + 2).split(/[/?#\\]/)[0] ?? ""
  if (url.username !== "" || url.password !== "" || authority.includes("@")) {
    return refuse("userinfo", "url must not contain user information")
  }
  if (url.hash !== "" || raw.includes("#")) return refuse("fragment", "url must not contain a fragment")
  if (url.hostname === "") return refuse("invalid_url", "url must have a host")
  if (options.allowPrivateTargets) return { ok: true, url }

  const host = url.hostname
  if (host.startsWith("[")) {
    return isBlockedIPv6(host.slice(1, -1))
      ? refuse("blocked_ip", "url must not target a private, loopback or reserved IPv6 address")
      : { ok: true, url }
  }
  if (isIPv4(host)) {
    return isBlockedIPv4(host)
      ? refuse("blocked_ip", "url must not target a private, loopback or reserved IPv4 address")
      : { ok: true, url }
  }
  if (isLocalhostName(host)) return refuse("localhost", "url must not target localhost")
  return { ok: true, url }
}

/** The URL without its query string, for audit records and logs (queries often carry tokens). */
export const redactUrl = (raw: string): string => {
  try {
    const url = new URL(raw)
    return `${url.protocol}//${url.host}${url.pathname}`
  } catch {
    return "(invalid url)"
  }
}
