import * as oidc from "openid-client"
import { IssuerUnavailableError } from "./errors.js"
import { tokenEndpointRefusal } from "./refusal.js"
import { sessionFromTokens, type StoredSession } from "./session.js"

/**
 * Access-token refresh with ONE refresh in flight per session in this process. Requests of
 * one session that arrive together (a page and its API calls) all await the same refresh
 * instead of each spending the rotating refresh token; the service's 5-second reuse grace
 * is only the safety net for other processes. A settled refresh is kept for RETAIN_MS so a
 * request that still carries the old cookie (sent before the browser stored the new one)
 * gets the same new session rather than a second rotation.
 *
 * Outcomes: the new session; `undefined` when the token endpoint refuses for good (an OAuth
 * error with a 4xx status, see refusal.ts: the grant is revoked, expired or reused, the user
 * is blocked, the client's secret was rotated, ...), which ends the session; anything else
 * (network, timeout, 5xx, 429, `temporarily_unavailable`, a response that cannot be used)
 * throws IssuerUnavailableError, a temporary failure (503), so an outage never signs users out.
 */
const RETAIN_MS = 10_000

export interface Refresher {
  readonly refresh: (session: StoredSession, requestedScope: string) => Promise<StoredSession | undefined>
  /** Refreshes being run or kept (exposed for tests and metrics). */
  readonly size: () => number
}

interface Entry {
  readonly refreshToken: string
  readonly promise: Promise<StoredSession | undefined>
  settledAt?: number
}

export const makeRefresher = (deps: {
  readonly configuration: () => Promise<oidc.Configuration>
  readonly now: () => number
}): Refresher => {
  const entries = new Map<string, Entry>()

  const sweep = (now: number) => {
    for (const [sid, e] of entries) if (e.settledAt !== undefined && now - e.settledAt > RETAIN_MS) entries.delete(sid)
  }

  const run = async (session: StoredSession, refreshToken: string, requestedScope: string) => {
    const config = await deps.configuration()
    try {
      const tokens = await oidc.refreshTokenGrant(config, refreshToken)
      return sessionFromTokens(tokens, deps.now(), { sid: session.sid, session, requestedScope })
    } catch (e) {
      if ((await tokenEndpointRefusal(e)) !== undefined) return undefined
      throw new IssuerUnavailableError("the token endpoint could not refresh the session", { cause: e })
    }
  }

  return {
    size: () => entries.size,
    refresh: (session, requestedScope) => {
      const now = deps.now()
      sweep(now)
      if (session.rt === undefined) return Promise.resolve(undefined) // no offline_access: nothing to refresh with
      const existing = entries.get(session.sid)
      if (existing !== undefined && existing.refreshToken === session.rt) return existing.promise
      const entry: Entry = {
        refreshToken: session.rt,
        promise: run(session, session.rt, requestedScope).then(
          (result) => {
            entry.settledAt = deps.now()
            return result
          },
          (e: unknown) => {
            // a temporary failure is not kept: the next request tries again
            if (entries.get(session.sid) === entry) entries.delete(session.sid)
            throw e
          },
        ),
      }
      entries.set(session.sid, entry)
      return entry.promise
    },
  }
}
