import { maskEmail } from "../events/schema.js"

// Shapes of what must never reach a log line (docs/architecture.md, Security model: "Logs never contain
// secrets, codes, tokens or full email addresses"). The code never logs these on purpose;
// this is the net for text we do not control: a database error's DETAIL quotes the
// conflicting value, a failure message may echo its input, a 404 path is whatever was asked.
const EMAIL = /[^\s@"'<>()[\]{},;:/\\]+@[^\s@"'<>()[\]{},;:/\\]+\.[A-Za-z]{2,}/g
// JWTs (ID, access and impersonation tokens): three base64url parts starting with `{"`.
const JWT = /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g
// Refresh tokens `rt_<family>.<generation>.<secret>` and API keys / dashboard tokens.
const PREFIXED = /\b(rt|sk_live|sk_test|dsh)_[A-Za-z0-9_.-]{16,}/g
// Server-made secrets are 32 random bytes in base64url (43 characters, mixed case); our ids
// are lowercase base32, so a long run holding an upper-case letter is taken for a secret.
const SECRET = /[A-Za-z0-9_-]{40,}/g
// One-time codes are 6 digits; no value we log on purpose is a lone 6-digit number (parts of
// hex ids, longer numbers and decimals are not lone).
const CODE = /(?<![\w-]|\d\.)\d{6}(?![\w-]|\.\d)/g

/**
 * Whether the text holds what every pattern above needs at least: an `@`, `eyJ`, a known prefix,
 * a run of 40 secret characters or 6 digits. Most of a log line's values (ids, statuses, routes)
 * hold none, and one pass over their characters is much cheaper than five regular expressions
 * (docs/decisions/performance.md, "Log lines"). True whenever any pattern could match.
 */
const mayHoldSomethingToMask = (text: string): boolean => {
  if (text.length < 6) return false
  if (text.includes("@") || text.includes("eyJ")) return true
  if (text.includes("rt_") || text.includes("sk_live_") || text.includes("sk_test_") || text.includes("dsh_"))
    return true
  let run = 0
  let digits = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const digit = c >= 48 && c <= 57
    run = digit || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45 ? run + 1 : 0
    digits = digit ? digits + 1 : 0
    if (run >= 40 || digits >= 6) return true
  }
  return false
}

/** Every pattern's replacement, in order (redactText without its first scan; exported for its test). */
export const redactEveryPattern = (text: string): string =>
  text
    .replace(JWT, "[jwt]")
    .replace(PREFIXED, (_, prefix: string) => `${prefix}_[redacted]`)
    .replace(SECRET, (run) => (/[A-Z]/.test(run) ? "[redacted]" : run))
    .replace(EMAIL, (email) => maskEmail(email))
    .replace(CODE, "[code]")

export const redactText = (text: string): string => (mayHoldSomethingToMask(text) ? redactEveryPattern(text) : text)

/** Redacts every string inside a JSON-like value (objects, arrays); other values pass. */
export const redactValue = (value: unknown, depth = 0): unknown => {
  if (typeof value === "string") return redactText(value)
  if (depth > 6 || value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = redactValue(v, depth + 1)
  return out
}
