import { BoundedMap } from "../../platform/bounded-map.js"
import type { KeyObject } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Context, Effect, Layer, Option, Queue } from "effect"
import { onLiveStateChanged } from "../../platform/live-state-changes.js"
import { onEnvironmentChanged } from "../../platform/environment-changes.js"
import { clientById, type OAuthClientRow } from "../token/client-repo.js"
import { type LiveState, liveState } from "./repo.js"

/**
 * This replica's memory of the live state behind access tokens (docs/decisions/performance.md): UserInfo and
 * introspection answer their live checks (user status, security version, session revoked
 * or expired; spec: Authentication rule 8) from it instead of reading Postgres per call.
 *
 * Coherence (decisions, "Performance"):
 * - every change to those columns announces itself when it commits: triggers on `users`
 *   and `login_sessions` NOTIFY channel `live_state` with '<environment_id> <user_id>'
 *   (sql/0140). Each replica LISTENs and drops that user's entries, so another replica's
 *   logout, block, email change or session revocation is seen as soon as the notification
 *   arrives (milliseconds; the tests require under 2 s);
 * - entries are kept only while the LISTEN connection is up: when it fails, everything is
 *   dropped and every read goes to Postgres until LISTEN is confirmed again ("flushed on
 *   reconnect"); a read that was in flight across any invalidation is not kept (epoch);
 * - the replica that makes a change drops the user's entries in the same request
 *   (src/platform/live-state-changes.ts, called by the repositories that write them) and keeps
 *   none for that user for `LOCAL_PENDING_MS`, so a read between the write and its commit
 *   is not kept either: the change is seen at once here, before the notification returns;
 * - expiry times are kept, not verdicts: idle and absolute expiry are compared with the
 *   Clock on every call. A session's expiry moving later is not announced (every refresh
 *   renews it; NOTIFY serialises the commits that send one), so a remembered expiry that has
 *   passed is never trusted: the row is read again.
 */
export const LIVE_STATE_CHANNEL = "live_state"
/** After a local write, no entry of that user is kept this long (longer than any of our transactions). */
export const LOCAL_PENDING_MS = 5_000
/**
 * Bounds of this memory (docs/decisions/rate-limits-and-caches.md: every map here is keyed by what callers present, so each
 * is bounded; the least recently stored entry is dropped first, and a dropped entry is only
 * read from Postgres again).
 */
export interface LiveStateCacheOptions {
  /** Sessions remembered across all users. */
  readonly sessions: number
  /** Sessions remembered for one user (a user with more reads the rest from Postgres). */
  readonly sessionsPerUser: number
  /** Clients remembered (introspection callers). */
  readonly clients: number
  /** Users and clients with a local write in flight (each kept LOCAL_PENDING_MS). */
  readonly pending: number
}

export const LIVE_STATE_CACHE: LiveStateCacheOptions = {
  sessions: 100_000,
  sessionsPerUser: 32,
  clients: 100_000,
  pending: 100_000,
}
/** Pause before listening again after the LISTEN connection failed. */
const RELISTEN_AFTER = "1 second"
/**
 * How long a remembered answer is replayed at most: another replica's change of the
 * Environment or its keys is seen through the Environment (5 s) and key caches plus this, as
 * for the public documents (src/http/static-answers.ts).
 */
export const ANSWER_TTL_MS = 1_000
/** Bound on remembered answers (oldest dropped first). */
const ANSWER_CAPACITY = 10_000

/** A full answer of an endpoint (UserInfo, introspection), as the Effect path wrote it. */
export interface RememberedAnswer {
  readonly status: number
  readonly contentType: string
  /** Every header but x-request-id. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

/** What a remembered answer was built from: it is replayed only while all of it is unchanged. */
export interface AnswerDependencies {
  readonly environmentId: string
  readonly userId: string
  readonly sessionId: string
  /** The live state the answer was built from: it must be the one this memory holds. */
  readonly live: LiveState
  /** The client row the caller authenticated with (introspection), likewise. */
  readonly client?: OAuthClientRow
  /** The answer is false from this time on at the latest (the access token's `exp`). */
  readonly validUntilMs: number
  /**
   * What lets the listener compute this endpoint's 200 for other tokens of the Environment (see
   * AnswerTemplate): the route, the Environment's issuer and the key that verified the token.
   */
  readonly template?: {
    readonly route: string
    readonly issuer: string
    readonly kid: string
    readonly key: KeyObject
  }
}

/**
 * What the listener needs to compute an endpoint's 200 for a token the Effect path has not seen
 * (src/oidc/userinfo/from-memory.ts), learned from an Effect-path 200 of the same route,
 * Environment and key: that path resolved the Environment (status, issuer) and the key (still a
 * key of the Environment) moments ago. Held ANSWER_TTL_MS, like a remembered answer, so another
 * replica's change of the Environment or its keys is seen as soon as through a remembered answer;
 * this replica's change ends it at once.
 */
export interface AnswerTemplate {
  readonly issuer: string
  readonly key: KeyObject
  readonly contentType: string
  /** Every header of the 200 but x-request-id (the same for every token of the route). */
  readonly headers: Readonly<Record<string, string>>
  /**
   * When the template ends: an answer computed from it is remembered no longer, so another
   * replica's change of the Environment or its keys is seen within the same bound either way.
   */
  readonly until: number
}

interface TemplateEntry {
  readonly template: AnswerTemplate
  readonly environmentId: string
  readonly until: number
  /** When a request was last sent to the application to renew this template (see `template`). */
  renewalAskedAt: number
}

/**
 * A template is renewed ahead of its end: in its last REFRESH_AHEAD_MS one request at a time goes
 * to the application (whose 200 leaves a new template) while the others keep being computed.
 * Left to expire, the next requests of every connection would reach the application at once,
 * once a second.
 */
const REFRESH_AHEAD_MS = 250

interface HeldClient {
  readonly environmentId: string
  readonly row: OAuthClientRow
}

interface AnswerEntry {
  readonly answer: RememberedAnswer
  readonly environmentId: string
  readonly userKey: string
  /** The user's entry and session state when remembered: a forgotten user has a new entry. */
  readonly sessions: Map<string, LiveState>
  readonly live: LiveState
  readonly clientId: string | undefined
  readonly client: HeldClient | undefined
  readonly until: number
}

export class LiveStateCache extends Context.Service<
  LiveStateCache,
  {
    /** The live state of a user and one of their sessions, from memory when it may be. */
    readonly read: (environmentId: string, userId: string, sessionId: string) => ReturnType<typeof liveState>
    /** A client's authentication state (introspection callers), from memory when it may be. */
    readonly readClient: (environmentId: string, clientId: string) => ReturnType<typeof clientById>
    /** A client row when this memory holds it and may serve it (LISTEN up), else undefined; never reads Postgres. */
    readonly peekClient: (environmentId: string, clientId: string) => OAuthClientRow | undefined
    /** Whether entries are being kept (the LISTEN connection is up). */
    readonly listening: () => boolean
    /** The invalidation count: taken before a read of user and session rows that `prime` may keep. */
    readonly epoch: () => number
    /**
     * Keeps a user's and session's state that the caller read itself (the token endpoint, which
     * reads both to decide a grant), under the same rule as `read`: only when nothing was
     * invalidated since `readAt` (an `epoch()` taken before that read), LISTEN is up and the user
     * has no local write in flight. The client's first UserInfo after a sign-in then reads no row.
     */
    readonly prime: (environmentId: string, row: LiveState, readAt: number) => void
    /** Entries held in memory (tests; the bounds). */
    readonly sizes: () => {
      readonly users: number
      readonly sessions: number
      readonly clients: number
      readonly pending: number
    }
    /**
     * Remembers an answer built from this memory's state (see AnswerDependencies), under a key
     * that names every input of the request it answered; nothing is kept when the state it was
     * built from is no longer the state held.
     */
    readonly rememberAnswer: (key: string, dependencies: AnswerDependencies, answer: RememberedAnswer) => void
    /**
     * The remembered answer of `key` while it is still true: LISTEN up, the user's and the
     * client's state unchanged since, the session unexpired, the token unexpired, and at most
     * ANSWER_TTL_MS old. Synchronous: the listener answers from it before any fiber exists.
     */
    readonly answer: (key: string) => RememberedAnswer | undefined
    /**
     * The live state of a user's session when this memory holds it and may serve it (LISTEN up,
     * the session unexpired), else undefined; never reads Postgres. Synchronous, as `answer`.
     */
    readonly peek: (environmentId: string, userId: string, sessionId: string) => LiveState | undefined
    /** The template of `route`'s 200 for tokens of `environmentId` signed with `kid`, while it holds. */
    readonly template: (route: string, environmentId: string, kid: string) => AnswerTemplate | undefined
  }
>()("oidc/LiveStateCache") {}

const userKey = (environmentId: string, userId: string) => `${environmentId} ${userId}`
const clientKey = (clientId: string) => `client ${clientId}`
const templateKey = (route: string, environmentId: string, kid: string) => `${route} ${environmentId} ${kid}`

/** This replica's live-state memory (a scoped Effect: it listens until its scope closes). */
export const makeLiveStateCache = Effect.fnUntraced(function* (options: LiveStateCacheOptions) {
  const pg = yield* PgClient.PgClient
  // Users are bounded by the sessions they hold altogether (heldSessions), not by their number.
  const byUser = new BoundedMap<string, BoundedMap<string, LiveState>>(Number.POSITIVE_INFINITY)
  /** Sessions held in `byUser` altogether. */
  let heldSessions = 0
  const clients = new BoundedMap<string, HeldClient>(options.clients)
  const answers = new BoundedMap<string, AnswerEntry>(ANSWER_CAPACITY)
  const templates = new BoundedMap<string, TemplateEntry>(ANSWER_CAPACITY)
  const pendingUntil = new BoundedMap<string, number>(options.pending)
  let listening = false
  let epoch = 0

  const dropUser = (key: string) => {
    heldSessions -= byUser.get(key)?.size ?? 0
    byUser.delete(key)
  }
  const forgetUser = (key: string) => {
    epoch++
    dropUser(key)
  }
  const forgetClient = (clientId: string) => {
    epoch++
    clients.delete(clientId)
  }
  const forgetAll = () => {
    epoch++
    byUser.clear()
    heldSessions = 0
    clients.clear()
    answers.clear()
    templates.clear()
  }
  /** May a row read since `startedAt` be kept under `key`? */
  const mayKeep = (key: string, startedAt: number) => {
    if (!listening || epoch !== startedAt) return false
    const pending = pendingUntil.get(key)
    if (pending === undefined) return true
    if (pending > clock.currentTimeMillisUnsafe()) return false
    pendingUntil.delete(key)
    return true
  }
  /**
   * A local write: no entry of `key` is kept for LOCAL_PENDING_MS. Entries are stored in
   * the order they end, so ended ones are dropped from the front; beyond the bound the one
   * that ends first is dropped early (its user's notification still invalidates it).
   */
  const markPending = (key: string, now: number) => {
    for (let oldest = pendingUntil.oldestKey(); oldest !== undefined; oldest = pendingUntil.oldestKey()) {
      if (pendingUntil.get(oldest)! > now) break
      pendingUntil.delete(oldest)
    }
    pendingUntil.store(key, now + LOCAL_PENDING_MS)
  }
  /** Keeps a session's row as the most recent entry, within both bounds. */
  const storeSession = (key: string, sessionId: string, row: LiveState) => {
    const sessions = byUser.get(key) ?? new BoundedMap<string, LiveState>(options.sessionsPerUser)
    byUser.store(key, sessions)
    const before = sessions.size
    sessions.store(sessionId, row)
    heldSessions += sessions.size - before
    while (heldSessions > options.sessions) dropUser(byUser.oldestKey()!)
  }

  const clock = yield* Clock.Clock
  const stopLocal = onLiveStateChanged((change) => {
    const key = change.kind === "user" ? userKey(change.environmentId, change.userId) : clientKey(change.clientId)
    if (change.kind === "user") forgetUser(key)
    else forgetClient(change.clientId)
    markPending(key, clock.currentTimeMillisUnsafe())
  })
  yield* Effect.addFinalizer(() => Effect.sync(stopLocal))
  // This replica's change of an Environment (status, domains, keys) ends its answers at once.
  const stopEnvironment = onEnvironmentChanged((environmentId) => {
    for (const [key, entry] of answers) if (entry.environmentId === environmentId) answers.delete(key)
    for (const [key, entry] of templates) if (entry.environmentId === environmentId) templates.delete(key)
  })
  yield* Effect.addFinalizer(() => Effect.sync(stopEnvironment))

  const listenOnce = Effect.gen(function* () {
    const queue = yield* pg.listen(LIVE_STATE_CHANNEL)
    forgetAll()
    listening = true
    for (;;) {
      const notification = yield* Queue.take(queue)
      const [first, second] = notification.payload.split(" ")
      if (first === "client" && second !== undefined) forgetClient(second)
      else if (first !== undefined && second !== undefined) forgetUser(userKey(first, second))
    }
  }).pipe(
    Effect.scoped,
    Effect.ensuring(
      Effect.sync(() => {
        listening = false
        forgetAll()
      }),
    ),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logWarning("live-state LISTEN connection lost; reading from Postgres until it is back", cause),
    ),
  )
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(listenOnce, Effect.sleep(RELISTEN_AFTER))))

  const peek = (environmentId: string, userId: string, sessionId: string) => {
    const held = byUser.get(userKey(environmentId, userId))?.get(sessionId)
    // A remembered expiry that has passed is read again: a later one is not announced (sql/0140).
    const nowMs = clock.currentTimeMillisUnsafe()
    return held !== undefined &&
      listening &&
      held.session_idle_expires_at!.getTime() > nowMs &&
      held.session_absolute_expires_at!.getTime() > nowMs
      ? held
      : undefined
  }

  const read = (environmentId: string, userId: string, sessionId: string) =>
    Effect.gen(function* () {
      const key = userKey(environmentId, userId)
      const held = peek(environmentId, userId, sessionId)
      if (held !== undefined) return held
      const startedAt = epoch
      const row = yield* liveState(environmentId, userId, sessionId)
      // Kept only when nothing was invalidated meanwhile, LISTEN is up, the user has no local
      // write in flight, and the row is complete (a missing session is read again next time).
      if (row === undefined || row.session_id === null || !mayKeep(key, startedAt)) return row
      storeSession(key, sessionId, row)
      return row
    })

  const prime = (environmentId: string, row: LiveState, readAt: number) => {
    const key = userKey(environmentId, row.user_id)
    if (row.session_id === null || !mayKeep(key, readAt)) return
    storeSession(key, row.session_id, row)
  }

  const peekClient = (environmentId: string, clientId: string) => {
    const held = clients.get(clientId)
    return held !== undefined && held.environmentId === environmentId && listening ? held.row : undefined
  }

  const readClient = (environmentId: string, clientId: string) =>
    Effect.gen(function* () {
      const held = peekClient(environmentId, clientId)
      if (held !== undefined) return held
      const startedAt = epoch
      const row = yield* clientById(environmentId, clientId)
      if (row === undefined || !mayKeep(clientKey(clientId), startedAt)) return row
      clients.store(clientId, { environmentId, row })
      return row
    })

  const rememberAnswer = (key: string, d: AnswerDependencies, answer: RememberedAnswer) => {
    const userKeyOf = userKey(d.environmentId, d.userId)
    const sessions = byUser.get(userKeyOf)
    if (!listening || sessions === undefined || sessions.get(d.sessionId) !== d.live) return
    const client = d.client === undefined ? undefined : clients.get(d.client.id)
    if (d.client !== undefined && client?.row !== d.client) return
    const nowMs = clock.currentTimeMillisUnsafe()
    if (d.template !== undefined) {
      const t = d.template
      const until = nowMs + ANSWER_TTL_MS
      templates.store(templateKey(t.route, d.environmentId, t.kid), {
        template: { issuer: t.issuer, key: t.key, contentType: answer.contentType, headers: answer.headers, until },
        environmentId: d.environmentId,
        until,
        renewalAskedAt: 0,
      })
    }
    answers.store(key, {
      answer,
      environmentId: d.environmentId,
      userKey: userKeyOf,
      sessions,
      live: d.live,
      clientId: d.client?.id,
      client,
      until: Math.min(d.validUntilMs, nowMs + ANSWER_TTL_MS),
    })
  }

  const answer = (key: string) => {
    const entry = answers.get(key)
    if (entry === undefined) return undefined
    const nowMs = clock.currentTimeMillisUnsafe()
    const live = entry.live
    const current =
      listening &&
      entry.until > nowMs &&
      byUser.get(entry.userKey) === entry.sessions &&
      entry.sessions.get(live.session_id!) === live &&
      live.session_idle_expires_at!.getTime() > nowMs &&
      live.session_absolute_expires_at!.getTime() > nowMs &&
      (entry.clientId === undefined || clients.get(entry.clientId) === entry.client)
    if (current) return entry.answer
    answers.delete(key)
    return undefined
  }

  const template = (route: string, environmentId: string, kid: string) => {
    const key = templateKey(route, environmentId, kid)
    const entry = templates.get(key)
    if (entry === undefined) return undefined
    const nowMs = clock.currentTimeMillisUnsafe()
    if (!listening || entry.until <= nowMs) {
      templates.delete(key)
      return undefined
    }
    // Renewal ahead of the end: this request goes to the application, the next ones are computed
    // until its 200 replaces the template (or, should it not, until another is sent half the window later).
    if (entry.until - nowMs <= REFRESH_AHEAD_MS && nowMs - entry.renewalAskedAt >= REFRESH_AHEAD_MS / 2) {
      entry.renewalAskedAt = nowMs
      return undefined
    }
    return entry.template
  }

  return LiveStateCache.of({
    read,
    peek,
    template,
    readClient,
    peekClient,
    listening: () => listening,
    epoch: () => epoch,
    prime,
    rememberAnswer,
    answer,
    sizes: () => ({ users: byUser.size, sessions: heldSessions, clients: clients.size, pending: pendingUntil.size }),
  })
})

export const LiveStateCacheLive = Layer.effect(LiveStateCache, makeLiveStateCache(LIVE_STATE_CACHE))

/** The live state through this replica's memory when the server runs one, else from Postgres. */
export const readLiveState = (environmentId: string, userId: string, sessionId: string) =>
  Effect.flatMap(Effect.serviceOption(LiveStateCache), (cache) =>
    Option.isSome(cache)
      ? cache.value.read(environmentId, userId, sessionId)
      : liveState(environmentId, userId, sessionId),
  )

/**
 * Where this replica keeps live state (the server; not the worker or the CLI): the epoch to take
 * before reading user and session rows, and the function that keeps what was read.
 */
export const liveStatePrimer = Effect.map(Effect.serviceOption(LiveStateCache), (cache) => {
  if (Option.isNone(cache)) return undefined
  const readAt = cache.value.epoch()
  return (environmentId: string, row: LiveState) => cache.value.prime(environmentId, row, readAt)
})

/** A client row through this replica's memory when the server runs one, else from Postgres. */
export const readClientRow = (environmentId: string, clientId: string) =>
  Effect.flatMap(Effect.serviceOption(LiveStateCache), (cache) =>
    Option.isSome(cache) ? cache.value.readClient(environmentId, clientId) : clientById(environmentId, clientId),
  )
