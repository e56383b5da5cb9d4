import { Effect } from "effect"
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
export const refreshSucceededEvent = (environmentId: string, family: FamilyState) => Effect.gen(function* () {
  const events = yield* Events
  const crypto = yield* Crypto
  const request = yield* CurrentRequest
  const ipHash = ipPrefixHash(crypto, family.workspace_id, request?.ip)
  return yield* events.prepare({
    type: "login.succeeded", workspaceId: family.workspace_id, environmentId,
    actor: { type: "end_user", id: family.user_id },
    payload: {
      userId: family.user_id, sessionId: family.session_id, method: "refresh_token", clientId: family.client_id,
      ...(ipHash === undefined ? {} : { ipPrefixHash: ipHash }),
    },
  })
})
