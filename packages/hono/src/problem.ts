import type { Context } from "hono"

/**
 * Problem Details (RFC 9457) answers of the helpers: the one table of what the library says
 * when it refuses a request, with the same `type` base and `code` vocabulary as the server
 * (src/http/problems.ts), so an application sees one error shape from both.
 */
export const PROBLEM_TYPE_BASE = "https://authservice.dev/problems/"

export const PROBLEMS = {
  /** requireSession: no valid session (spec: adapter helpers, `code: "unauthorized"`). */
  unauthorized: { status: 401, title: "Unauthorized" },
  /** bearerTokenMiddleware: missing, malformed or refused access token (RFC 6750 3.1). */
  invalid_token: { status: 401, title: "Invalid access token" },
  /** The issuer (discovery, JWKS or token endpoint) could not be reached or answered 5xx. */
  temporarily_unavailable: { status: 503, title: "Authentication service temporarily unavailable" },
  /** POST login/logout from another origin, or a cross-site GET logout. */
  csrf_rejected: { status: 403, title: "Cross-site request refused" },
  /** The callback arrived without (or with an expired) login transaction cookie. */
  login_transaction_missing: { status: 400, title: "No sign-in in progress" },
  /** The callback's `state` is not the one this browser's transaction holds. */
  invalid_state: { status: 400, title: "Sign-in state mismatch" },
  /** The issuer refused the sign-in (error response, or the code exchange failed). */
  login_failed: { status: 400, title: "Sign-in failed" },
} as const

export type ProblemCode = keyof typeof PROBLEMS

export const problemBody = (code: ProblemCode, detail?: string) => ({
  type: `${PROBLEM_TYPE_BASE}${code}`,
  title: PROBLEMS[code].title,
  status: PROBLEMS[code].status,
  code,
  ...(detail === undefined ? {} : { detail }),
})

/** Answers `application/problem+json`; `headers` adds e.g. `WWW-Authenticate` or `Retry-After`. */
export const problem = (
  c: Context,
  code: ProblemCode,
  options: { detail?: string; headers?: Record<string, string> } = {},
) => {
  for (const [name, value] of Object.entries(options.headers ?? {})) c.header(name, value)
  c.header("Cache-Control", "no-store")
  return c.body(JSON.stringify(problemBody(code, options.detail)), PROBLEMS[code].status, {
    "Content-Type": "application/problem+json",
  })
}

/** 503 with `Retry-After` (RFC 9110 10.2.3): the issuer is unreachable; the client may try again shortly. */
export const temporarilyUnavailable = (c: Context) =>
  problem(c, "temporarily_unavailable", { headers: { "Retry-After": "5" } })
