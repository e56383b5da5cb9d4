import { checkPkce, checkStateLike, parseResources, parseScope } from "../../login/rules.js"

/** A syntactically valid authorization request (spec: OIDC Authorize table). */
export interface AuthorizeRequest {
  readonly clientId: string
  readonly redirectUri: string
  readonly scopes: ReadonlyArray<string>
  readonly state: string
  readonly codeChallenge: string
  readonly nonce: string | undefined
  readonly resources: ReadonlyArray<string>
}

/** Parameters we read; `resource` alone may repeat (RFC 8707 section 2). */
const SINGLE = [
  "response_type",
  "client_id",
  "redirect_uri",
  "scope",
  "state",
  "code_challenge",
  "code_challenge_method",
  "nonce",
] as const

/**
 * Where an error may go: `client_id` and `redirect_uri`, each sent exactly once. A failure here
 * leaves nowhere to send an error (RFC 6749 4.1.2.1): the issuer answers it itself.
 */
export const parseReturnTarget = (
  query: URLSearchParams,
): { readonly clientId: string; readonly redirectUri: string } | { readonly failure: string } => {
  for (const name of ["client_id", "redirect_uri"] as const) {
    const values = query.getAll(name)
    if (values.length === 0 || values[0] === "") return { failure: `${name} is required` }
    if (values.length > 1) return { failure: `${name} must not be repeated` }
  }
  return { clientId: query.get("client_id")!, redirectUri: query.get("redirect_uri")! }
}

/** `state` as the client will expect it back: the value when sent exactly once. */
export const stateToReturn = (query: URLSearchParams) => {
  const values = query.getAll("state")
  return values.length === 1 ? values[0] : undefined
}

/**
 * OIDC Core 6: a Request Object, by value or by reference, is not supported (discovery:
 * `request_parameter_supported` and `request_uri_parameter_supported` are false). Its
 * parameters could differ from the query's, so the request is refused, never half-read.
 */
export const requestObjectFailure = (query: URLSearchParams) => {
  if (query.has("request"))
    return {
      error: "request_not_supported",
      description: "the request parameter (a Request Object) is not supported; send the parameters in the query",
    }
  if (query.has("request_uri"))
    return {
      error: "request_uri_not_supported",
      description: "the request_uri parameter is not supported; send the parameters in the query",
    }
  return undefined
}

/**
 * The syntax rules, in the order of the spec's table: the spec's `invalid_request`.
 * `prompt`, `max_age` and `login_hint` are ignored (spec), as are parameters this service
 * does not know.
 */
export const parseAuthorizeQuery = (
  query: URLSearchParams,
): { readonly request: AuthorizeRequest } | { readonly failure: string } => {
  // RFC 6749 section 3.1: request parameters MUST NOT be included more than once.
  for (const name of SINGLE) {
    if (query.getAll(name).length > 1) return { failure: `${name} must not be repeated` }
  }
  const get = (name: (typeof SINGLE)[number]) => query.get(name) ?? undefined
  const responseType = get("response_type")
  if (responseType === undefined || responseType === "") return { failure: "response_type is required" }
  if (responseType !== "code") return { failure: "unsupported response_type: only code is supported" }
  const clientId = get("client_id")
  if (clientId === undefined || clientId === "") return { failure: "client_id is required" }
  const redirectUri = get("redirect_uri")
  if (redirectUri === undefined || redirectUri === "") return { failure: "redirect_uri is required" }
  const scope = get("scope")
  if (scope === undefined) return { failure: "scope is required" }
  const scopes = parseScope(scope)
  if ("failure" in scopes) return { failure: scopes.failure }
  const state = get("state")
  if (state === undefined) return { failure: "state is required for every client (1 to 512 characters)" }
  const stateProblem = checkStateLike("state", state)
  if (stateProblem !== undefined) return { failure: stateProblem }
  const codeChallenge = get("code_challenge")
  if (codeChallenge === undefined)
    return {
      failure: "code_challenge is required: PKCE with S256 is required for every client, confidential ones included",
    }
  const method = get("code_challenge_method")
  if (method === undefined) return { failure: "code_challenge_method is required (S256)" }
  const pkceProblem = checkPkce(codeChallenge, method)
  if (pkceProblem !== undefined) return { failure: pkceProblem }
  const nonce = get("nonce")
  if (nonce !== undefined) {
    const nonceProblem = checkStateLike("nonce", nonce)
    if (nonceProblem !== undefined) return { failure: nonceProblem }
  }
  const resources = parseResources(query.getAll("resource"))
  if ("failure" in resources) return { failure: resources.failure }
  return {
    request: {
      clientId,
      redirectUri,
      scopes: scopes.scopes,
      state,
      codeChallenge,
      nonce,
      resources: resources.resources,
    },
  }
}
