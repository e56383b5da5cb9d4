import type { LoginClient } from "../login/clients.js"
import { CLIENT_RULE_MESSAGES, type ClientRuleFailure, stillRegistered } from "../login/rules.js"

/**
 * The client rule failures of /oauth2/authorize whose error the client may receive at its
 * redirect URI (docs/decisions/rp-libraries.md). The spec sends every client rule
 * failure to the Hosted Login error page with no code; RFC 6749 4.1.2.1 forbids a redirect
 * when the client or its redirect URI cannot be trusted (unknown or disabled client,
 * unregistered redirect URI), so only these three, where both are trusted, get a way back:
 * each with the OAuth error code its RFC names.
 */
export const RETURNABLE_ERRORS: Readonly<Partial<Record<ClientRuleFailure, string>>> = {
  scope_not_allowed: "invalid_scope", // RFC 6749 4.1.2.1
  resource_not_allowed: "invalid_target", // RFC 8707 2
  nonce_required: "invalid_request", // OIDC Core 3.1.2.6 (a required parameter is missing)
}

/** What the authorization request said about where to return, carried in the error page's URL. */
export interface ReturnTarget {
  readonly clientId: string
  readonly redirectUri: string
  readonly state: string
}

/**
 * The error response at the client's redirect URI (RFC 6749 4.1.2.1): `error`,
 * `error_description`, `state`, plus `iss` (RFC 9207). Only when the failure is returnable
 * and, checked again now, the client is active and the redirect URI registered byte for
 * byte: the error page's query is not trusted.
 */
export const errorReturnUrl = (failure: string, target: ReturnTarget, client: LoginClient | undefined, issuer: string) => {
  const error = Object.hasOwn(RETURNABLE_ERRORS, failure) ? RETURNABLE_ERRORS[failure as ClientRuleFailure] : undefined
  if (error === undefined || !stillRegistered(client, target.redirectUri)) return undefined
  const url = new URL(target.redirectUri)
  url.searchParams.set("error", error)
  url.searchParams.set("error_description", CLIENT_RULE_MESSAGES[failure as ClientRuleFailure])
  url.searchParams.set("state", target.state)
  url.searchParams.set("iss", issuer)
  return url.href
}
