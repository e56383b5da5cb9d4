import type { LoginClient } from "./clients.js"

/**
 * The parameter rules a login request must pass, shared by `POST /auth/transactions` and
 * `GET /oauth2/authorize` (spec: Login transactions "Create body"; OIDC Authorize table;
 * Authentication rules 1, 7, 9, 10; Limits). Syntax rules come first (a malformed request
 * is refused outright); client rules second (authorize redirects those to the Hosted Login
 * error page instead).
 */

/** Spec, Authentication rule 7 / Discovery `scopes_supported`. */
export const SUPPORTED_SCOPES: ReadonlyArray<string> = ["openid", "profile", "email", "offline_access"]

/** Spec, Limits: at most 20 `resource` values. */
export const MAX_RESOURCES = 20
/** Spec, Limits: `state` and `nonce` are 1 to 512 characters. */
export const MAX_STATE_LENGTH = 512

/** A syntax failure: the message becomes the error's detail. */
export type RuleFailure = string

/** Characters, not UTF-16 units: an emoji is one character. */
const characters = (s: string) => Array.from(s).length

/** `state` (required) and `nonce` (when present): 1 to 512 characters. */
export const checkStateLike = (name: "state" | "nonce", value: string): RuleFailure | undefined => {
  const n = characters(value)
  return n >= 1 && n <= MAX_STATE_LENGTH ? undefined : `${name} must be 1 to ${MAX_STATE_LENGTH} characters`
}

/**
 * PKCE (spec: Authentication rule 1; RFC 7636 section 4.2): only `S256`, `plain` refused;
 * the challenge is BASE64URL(SHA256(verifier)), i.e. exactly 43 base64url characters.
 */
export const checkPkce = (challenge: string, method: string): RuleFailure | undefined => {
  if (method !== "S256")
    return method === "plain"
      ? "code_challenge_method plain is not supported; use S256"
      : "code_challenge_method must be S256"
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge))
    return "code_challenge must be 43 base64url characters (BASE64URL(SHA256(code_verifier)))"
  return undefined
}

/** RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by single spaces. */
const SCOPE_SYNTAX = /^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/

/**
 * `scope`: space-delimited; every token must be a scope this service knows (spec:
 * "unknown scope tokens give invalid_request"). Duplicates collapse. Returns the scopes or a failure.
 */
export const parseScope = (
  scope: string,
): { readonly scopes: ReadonlyArray<string> } | { readonly failure: RuleFailure } => {
  if (!SCOPE_SYNTAX.test(scope)) return { failure: "scope must be space-delimited scope tokens" }
  const scopes = [...new Set(scope.split(" "))]
  const unknown = scopes.filter((s) => !SUPPORTED_SCOPES.includes(s))
  if (unknown.length > 0) return { failure: `unknown scope: ${unknown.join(" ")}` }
  return { scopes }
}

/** `resource` (RFC 8707 section 2): absolute URIs without a fragment, at most 20. Duplicates collapse. */
export const parseResources = (
  resources: ReadonlyArray<string>,
): { readonly resources: ReadonlyArray<string> } | { readonly failure: RuleFailure } => {
  if (resources.length > MAX_RESOURCES) return { failure: `at most ${MAX_RESOURCES} resource values are allowed` }
  for (const r of resources) {
    if (!URL.canParse(r) || r.includes("#") || /\s/.test(r))
      return { failure: "each resource must be an absolute URI without a fragment" }
  }
  return { resources: [...new Set(resources)] }
}

/** What a request asks of a client, after the syntax rules passed. */
export interface LoginRequestShape {
  readonly redirectUri: string
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly nonce: string | undefined
}

/** Why a syntactically valid request is refused for its client (authorize: the Hosted Login error page). */
export type ClientRuleFailure =
  | "unknown_client"
  | "client_disabled"
  | "redirect_uri_mismatch"
  | "scope_not_allowed"
  | "resource_not_allowed"
  | "nonce_required"

export const CLIENT_RULE_MESSAGES: Readonly<Record<ClientRuleFailure, string>> = {
  unknown_client: "client_id is not a registered client of this Environment",
  client_disabled: "the client is disabled",
  redirect_uri_mismatch: "redirect_uri does not exactly match a registered redirect URI",
  scope_not_allowed: "scope contains scopes the client is not allowed to request",
  resource_not_allowed: "resource contains values that are not in the client's allowed_resources",
  nonce_required: "nonce is required when the openid scope is requested",
}

/**
 * The client rules, in order: registered in this Environment; active; redirect URI equal
 * byte for byte to a registered one, with no normalisation (rule 10); every scope allowed
 * (rule 7); every resource registered (rule 9); a nonce whenever `openid` is requested
 * (rule 7; docs/architecture.md applies it to both entry points).
 */
export const checkAgainstClient = (
  client: LoginClient | undefined,
  request: LoginRequestShape,
): ClientRuleFailure | undefined => {
  if (!client) return "unknown_client"
  if (client.status !== "active") return "client_disabled"
  if (!client.redirect_uris.includes(request.redirectUri)) return "redirect_uri_mismatch"
  if (request.scopes.some((s) => !client.allowed_scopes.includes(s))) return "scope_not_allowed"
  if (request.resources.some((r) => !client.allowed_resources.includes(r))) return "resource_not_allowed"
  if (request.scopes.includes("openid") && request.nonce === undefined) return "nonce_required"
  return undefined
}

/** Re-checked at complete: the client still active and the redirect URI still registered. */
export const stillRegistered = (client: LoginClient | undefined, redirectUri: string) =>
  client !== undefined && client.status === "active" && client.redirect_uris.includes(redirectUri)
