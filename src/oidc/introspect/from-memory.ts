import type { Clock } from "effect"
import type { LiveStateCache, RememberedAnswer } from "../access-token/live-cache.js"
import { accessTokenKid, anyAudience, checkSignedAccessToken, isRefusal, liveRefusal } from "../access-token/verify.js"
import { looksLikeRefreshToken } from "../refresh/token-format.js"
import { checkClient, presentedClientOf } from "../token/client-auth.js"
import { fromForm, type OAuthParams } from "../token/params.js"
import { OAuthError } from "../../http/errors.js"
import { activeIntrospection } from "./claims.js"

/** The route name of introspection's answer templates (live-cache.ts). */
export const INTROSPECTION_TEMPLATE = "introspect"

/** What the listener read of an introspection request. */
export interface IntrospectionRequest {
  readonly environmentId: string
  /** The request's key among remembered answers (introspectionAnswerKey), built once by the listener. */
  readonly answerKey: string
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly body: string
  /** The client address, as the application derives it (TRUST_PROXY). */
  readonly ip: string | undefined
}

/**
 * Counts the request against the introspection limit of its client and address (the
 * application's `limitIntrospection`, src/oidc/introspect/caller.ts): true when within the limit,
 * false when refused; rejects when the count could not be made.
 */
export type CountIntrospection = (environmentId: string, clientId: string, ip: string | undefined) => Promise<boolean>

/** A parameter sent at most once and without a NUL, as OAuthParams.one accepts it; "invalid" otherwise. */
const single = (params: OAuthParams, name: string) => {
  const values = params.many(name)
  if (values.length > 1 || values[0]?.includes("\u0000")) return "invalid" as const
  return values[0]
}

/**
 * Introspection's active 200 computed by the listener (docs/decisions/performance.md,
 * "Introspection for a token not seen before is computed by the listener"), the counterpart of
 * UserInfo's (src/oidc/userinfo/from-memory.ts): for a client caller and a token this replica
 * has not answered before, when everything the application reads for it is in memory: the
 * Environment, its issuer and the verifying key from a template an application 200 left, the
 * caller's client row and the token's live state from this replica's memory. The checks are the
 * application's own (presentedClientOf, checkClient, checkSignedAccessToken, liveRefusal) with
 * the same Clock, the body the same function (activeIntrospection).
 *
 * Only active answers are computed. Anything else returns undefined before anything is counted,
 * and the request goes to the application, which answers it as always. When the checks pass,
 * the request is counted against the introspection limit exactly as the application counts it
 * (its 200 passes through that count, and a hit waits for its count to commit); the answer is
 * given only when the count is within the limit and the state the answer was built from is still
 * the state held. A refused or failed count, or a change during it, resolves to undefined: the
 * application then answers (429, 503 or the new state), counting the request a second time.
 */
export const makeIntrospectionFromMemory =
  (cache: LiveStateCache["Service"], clock: Clock.Clock, count: CountIntrospection) =>
  (request: IntrospectionRequest): Promise<RememberedAnswer | undefined> | undefined => {
    const { environmentId } = request
    if ((request.contentType ?? "").split(";")[0]!.trim().toLowerCase() !== "application/x-www-form-urlencoded")
      return undefined
    const params = fromForm(request.body)
    const token = single(params, "token")
    const clientId = single(params, "client_id")
    const secret = single(params, "client_secret")
    if (token === undefined || token === "invalid" || clientId === "invalid" || secret === "invalid") return undefined
    if (looksLikeRefreshToken(token)) return undefined

    const presented = presentedClientOf(request.authorization, clientId, secret)
    if (presented instanceof OAuthError || presented.method === "none") return undefined
    const client = checkClient(presented, cache.peekClient(environmentId, presented.clientId))
    if (client instanceof OAuthError || client.token_endpoint_auth_method === "none") return undefined

    const header = accessTokenKid(token)
    if (isRefusal(header)) return undefined
    const template = cache.template(INTROSPECTION_TEMPLATE, environmentId, header.kid)
    if (template === undefined) return undefined
    const checked = checkSignedAccessToken(token, template.key, clock.currentTimeMillisUnsafe(), {
      issuer: template.issuer,
      audience: anyAudience,
    })
    if (isRefusal(checked)) return undefined
    const { claims } = checked
    const live = cache.peek(environmentId, claims.sub, claims.sid)
    if (live === undefined || liveRefusal(live, claims, clock.currentTimeMillisUnsafe()) !== undefined) return undefined

    return count(environmentId, client.id, request.ip).then(
      (within) => {
        // What the answer was built from must still be what this memory holds after the count.
        if (
          !within ||
          cache.peek(environmentId, claims.sub, claims.sid) !== live ||
          cache.peekClient(environmentId, client.id) !== client ||
          liveRefusal(live, claims, clock.currentTimeMillisUnsafe()) !== undefined ||
          claims.exp * 1000 <= clock.currentTimeMillisUnsafe()
        )
          return undefined
        const answer: RememberedAnswer = {
          status: 200,
          contentType: template.contentType,
          headers: template.headers,
          body: Buffer.from(JSON.stringify(activeIntrospection(claims, checked.rawAud))),
        }
        cache.rememberAnswer(
          request.answerKey,
          {
            environmentId,
            userId: claims.sub,
            sessionId: claims.sid,
            live,
            client,
            validUntilMs: Math.min(claims.exp * 1000, template.until),
          },
          answer,
        )
        return answer
      },
      () => undefined,
    )
  }
