import type { LoginClient } from "../login/clients.js"
import { CLIENT_RULE_MESSAGES, type ClientRuleFailure, stillRegistered } from "../login/rules.js"

/**
 * The client rule failures of /oauth2/authorize whose error the client may receive at its
 * redirect URI (docs/decisions/rp-libraries.md). The spec sends every client rule failure to
 * the Hosted Login error page with no code; RFC 6749 4.1.2.1 forbids sending the error to the
 * client when the client is unknown or the redirect URI unregistered, so those two never get a
 * way back. The others link back, each with the OAuth error code its RFC names.
 */
export const RETURNABLE_ERRORS: Readonly<Partial<Record<ClientRuleFailure, string>>> = {
  client_disabled: "unauthorized_client", // RFC 6749 4.1.2.1: the client may not obtain a code
  scope_not_allowed: "invalid_scope", // RFC 6749 4.1.2.1
  resource_not_allowed: "invalid_target", // RFC 8707 2
  nonce_required: "invalid_request", // OIDC Core 3.1.2.6 (a required parameter is missing)
}

/** What the authorization request said about where to return, carried in the error page's URL. */
export interface ReturnTarget {
  readonly clientId: string
  readonly redirectUri: string
  /** Absent when the request sent none (or sent it more than once): then none is returned. */
  readonly state: string | undefined
}

/**
 * An authorization error response (RFC 6749 4.1.2.1): the registered redirect URI (its own query
 * kept) with `error`, `error_description`, `state` when the request sent one, and `iss` (RFC 9207).
 * Never a `code`.
 */
export const authorizationErrorUrl = (
  redirectUri: string,
  answer: {
    readonly error: string
    readonly description: string
    readonly state: string | undefined
    readonly issuer: string
  },
) => {
  const url = new URL(redirectUri)
  url.searchParams.set("error", answer.error)
  url.searchParams.set("error_description", answer.description)
  if (answer.state !== undefined) url.searchParams.set("state", answer.state)
  url.searchParams.set("iss", answer.issuer)
  return url.href
}

/**
 * Whether the target may hear of the failure now: the error page's query is not trusted, so
 * the client is read again. A disabled client's failure needs the client still disabled; every
 * other failure needs it active; all need the redirect URI registered byte for byte.
 */
const mayReturn = (failure: ClientRuleFailure, target: ReturnTarget, client: LoginClient | undefined) =>
  failure === "client_disabled"
    ? client !== undefined && client.status === "disabled" && client.redirect_uris.includes(target.redirectUri)
    : stillRegistered(client, target.redirectUri)

/** The error response at the client's redirect URI for a returnable failure, or undefined. */
export const errorReturnUrl = (
  failure: string,
  target: ReturnTarget,
  client: LoginClient | undefined,
  issuer: string,
) => {
  const error = Object.hasOwn(RETURNABLE_ERRORS, failure) ? RETURNABLE_ERRORS[failure as ClientRuleFailure] : undefined
  if (error === undefined || !mayReturn(failure as ClientRuleFailure, target, client)) return undefined
  return authorizationErrorUrl(target.redirectUri, {
    error,
    description: CLIENT_RULE_MESSAGES[failure as ClientRuleFailure],
    state: target.state,
    issuer,
  })
}
