/**
 * The one failure the helpers treat as temporary: the issuer could not be reached, timed out
 * or answered with a server error (discovery, JWKS, token endpoint). Routes answer it with
 * 503 `temporarily_unavailable` and never turn it into a sign-in redirect or a cleared
 * session (spec: "a temporary refresh failure gives 503 and never redirects").
 */
export class IssuerUnavailableError extends Error {
  override readonly name = "IssuerUnavailableError"
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}

export const isIssuerUnavailable = (e: unknown): e is IssuerUnavailableError => e instanceof IssuerUnavailableError
