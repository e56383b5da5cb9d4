import { isIP } from "node:net"
import type { AppConfig } from "../../platform/config.js"

/** Names that resolve to the local machine or network, never to a public Interaction Domain. */
const LOCAL_SUFFIXES = ["localhost", "local", "localdomain", "internal", "home.arpa"]

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

const hostOnly = (host: string) => host.replace(/:\d+$/, "")

/**
 * Why `hostname` cannot be a Custom Domain, or undefined: it must be a lower-case DNS name
 * (RFC 1123 labels, at least two), not an IP address, not localhost-type, and outside the
 * platform's own names (PLATFORM_DOMAIN and its subdomains, the issuer and Management hosts),
 * which the host dispatcher already claims.
 */
export const hostnameProblem = (config: AppConfig, hostname: string): string | undefined => {
  if (isIP(hostname) !== 0 || isIP(hostname.replace(/^\[|\]$/g, "")) !== 0)
    return "must be a DNS name, not an IP address"
  if (hostname !== hostname.toLowerCase()) return "must be lower case"
  if (hostname.length > 253) return "must be at most 253 characters"
  const labels = hostname.split(".")
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) {
    return "must be a DNS name of at least two labels (letters, digits, hyphens; no trailing dot, port or path)"
  }
  if (/^\d+$/.test(labels[labels.length - 1]!)) return "must be a DNS name, not an IP address"
  if (LOCAL_SUFFIXES.some((s) => hostname === s || hostname.endsWith(`.${s}`)))
    return "must not be a localhost-type name"
  const platform = config.platformDomain
  if (hostname === platform || hostname.endsWith(`.${platform}`))
    return `must not be under the platform domain ${platform}`
  if (hostname === hostOnly(config.canonicalIssuerHost) || hostname === hostOnly(config.managementHost)) {
    return "must not be one of the platform's own hosts"
  }
  return undefined
}
