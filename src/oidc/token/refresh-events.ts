import { Effect } from "effect"
import { Audit } from "../../platform/audit.js"
import { Crypto } from "../../platform/crypto.js"
import { Events } from "../../platform/events/service.js"
import { ipPrefixHash } from "../../platform/ip-prefix.js"
import { CurrentRequest } from "../../platform/request-context.js"
import type { FamilyState } from "../refresh/repo.js"

/**
 * Spec, Events: `login.succeeded` allows method `refresh_token`. A rotation is the user
 * staying signed in, so it is reported as a login with that method (same session, same
 * client), written by the rotation's own statement (src/oidc/refresh/repo.ts rotateFamily), so
 * it exists exactly when the rotation commits. A grace-window replay is not a new login and
 * emits nothing; `session.created` is never emitted by a refresh (no session is created).
 */
export const refreshSucceededEvent = Effect.fnUntraced(function* (environmentId: string, family: FamilyState) {
  const events = yield* Events
  const crypto = yield* Crypto
  const request = yield* CurrentRequest
  const ipHash = ipPrefixHash(crypto, family.workspace_id, request?.ip)
  return yield* events.prepare({
    type: "login.succeeded",
    workspaceId: family.workspace_id,
    environmentId,
    actor: { type: "end_user", id: family.user_id },
    payload: {
      userId: family.user_id,
      sessionId: family.session_id,
      method: "refresh_token",
      clientId: family.client_id,
      ...(ipHash === undefined ? {} : { ipPrefixHash: ipHash }),
    },
  })
})

/**
 * Spec, Events: `login.failed` allows method `refresh_token`. A refresh proven by its secret
 * for a blocked user is that user trying to stay signed in and being refused (403
 * access_denied), so it is reported like a blocked user's Email OTP or passkey verify:
 * reason `user_blocked`, with the client (decisions, "Tokens: refresh events"). Committed on
 * its own (no transaction is open), since the answer is a refusal; the token and its family
 * are left as they are.
 */
export const refreshRefusedForBlockedUser = (environmentId: string, family: FamilyState) =>
  Effect.gen(function* () {
    const events = yield* Events
    const audit = yield* Audit
    const crypto = yield* Crypto
    const request = yield* CurrentRequest
    const ipHash = ipPrefixHash(crypto, family.workspace_id, request?.ip)
    const actor = { type: "end_user" as const, id: family.user_id }
    yield* events.emit({
      type: "login.failed",
      workspaceId: family.workspace_id,
      environmentId,
      actor,
      payload: {
        userId: family.user_id,
        method: "refresh_token",
        reason: "user_blocked",
        clientId: family.client_id,
        ...(ipHash === undefined ? {} : { ipPrefixHash: ipHash }),
      },
    })
    yield* audit.append({
      workspaceId: family.workspace_id,
      environmentId,
      actor,
      action: "login.failed",
      subjectType: "user",
      subjectId: family.user_id,
      result: "failure",
      details: {
        reason: "user_blocked",
        method: "refresh_token",
        client_id: family.client_id,
        refresh_family_id: family.id,
      },
    })
  })
