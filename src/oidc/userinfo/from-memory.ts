import type { Clock } from "effect"
import type { LiveStateCache, RememberedAnswer } from "../access-token/live-cache.js"
import { userinfoAnswerKey } from "../access-token/remembered-answers.js"
import { accessTokenKid, anyAudience, checkSignedAccessToken, isRefusal, liveRefusal } from "../access-token/verify.js"
import { userinfoClaims } from "./claims.js"

/** The route name of UserInfo's answer templates (live-cache.ts). */
export const USERINFO_TEMPLATE = "userinfo"

/**
 * A bearer token in the one form the listener reads itself: one space, base64url and dots (the
 * form every access token of ours has). Any other form the application's parser accepts
 * (bearer.ts) goes to the application.
 */
const BEARER = /^Bearer ([A-Za-z0-9_.-]+)$/

/**
 * UserInfo's 200 computed by the listener (docs/decisions/performance.md, "UserInfo for a
 * token not seen before is computed by the listener"): for a token this replica has not answered before, when
 * everything the Effect path reads for it is already in memory. The Environment, its issuer and
 * the verifying key come from a template an Effect-path 200 left moments ago (AnswerTemplate), the
 * live state from this replica's memory, and the checks are the Effect path's own functions
 * (checkSignedAccessToken, liveRefusal) with the same Clock. Only 200s are computed: a refusal,
 * a miss or anything unusual returns undefined and the request goes to the application, which
 * answers it as always. The computed answer is remembered for a replay of the same request.
 */
export const makeUserinfoFromMemory =
  (cache: LiveStateCache["Service"], clock: Clock.Clock) =>
  (environmentId: string, target: string, authorization: string): RememberedAnswer | undefined => {
    const bearer = BEARER.exec(authorization)
    if (bearer === null) return undefined
    const token = bearer[1]!
    const header = accessTokenKid(token)
    if (isRefusal(header)) return undefined
    const template = cache.template(USERINFO_TEMPLATE, environmentId, header.kid)
    if (template === undefined) return undefined
    const nowMs = clock.currentTimeMillisUnsafe()
    const checked = checkSignedAccessToken(token, template.key, nowMs, {
      issuer: template.issuer,
      audience: anyAudience,
    })
    if (isRefusal(checked)) return undefined
    const { claims } = checked
    if (!claims.scopes.includes("openid")) return undefined
    const live = cache.peek(environmentId, claims.sub, claims.sid)
    if (live === undefined || liveRefusal(live, claims, nowMs) !== undefined) return undefined
    const answer: RememberedAnswer = {
      status: 200,
      contentType: template.contentType,
      headers: template.headers,
      body: Buffer.from(JSON.stringify(userinfoClaims(claims, live))),
    }
    cache.rememberAnswer(
      userinfoAnswerKey(target, authorization),
      {
        environmentId,
        userId: claims.sub,
        sessionId: claims.sid,
        live,
        validUntilMs: Math.min(claims.exp * 1000, template.until),
      },
      answer,
    )
    return answer
  }
