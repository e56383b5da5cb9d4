import { PgClient } from "@effect/sql-pg"
import { Cause, Clock, Context, Effect, Layer, Option, Queue } from "effect"
import { onLiveStateChanged } from "../../platform/live-state-changes.js"
import { onEnvironmentChanged } from "../../tenancy/changes.js"
import { clientById, type OAuthClientRow } from "../token/client-repo.js"
import { type LiveState, liveState } from "./repo.js"

/**
 * This replica's memory of the live state behind access tokens (issue 13): UserInfo and
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
/** Bound on remembered users (least recently stored evicted first). */
const CAPACITY = 100_000
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
}

interface HeldClient { readonly environmentId: string; readonly row: OAuthClientRow }

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

export class LiveStateCache extends Context.Service<LiveStateCache, {
  /** The live state of a user and one of their sessions, from memory when it may be. */
  readonly read: (environmentId: string, userId: string, sessionId: string) => ReturnType<typeof liveState>
  /** A client's authentication state (introspection callers), from memory when it may be. */
  readonly readClient: (environmentId: string, clientId: string) => ReturnType<typeof clientById>
  /** Whether entries are being kept (the LISTEN connection is up). */
  readonly listening: () => boolean
  /** Users held in memory (tests; the bound). */
  readonly size: () => number
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
}>()("oidc/LiveStateCache") {}

const userKey = (environmentId: string, userId: string) => `${environmentId} ${userId}`
const clientKey = (clientId: string) => `client ${clientId}`

export const LiveStateCacheLive = Layer.effect(LiveStateCache, Effect.gen(function* () {
  const pg = yield* PgClient.PgClient
  const byUser = new Map<string, Map<string, LiveState>>()
  const clients = new Map<string, HeldClient>()
  const answers = new Map<string, AnswerEntry>()
  const pendingUntil = new Map<string, number>()
  let listening = false
  let epoch = 0

  const forgetUser = (key: string) => {
    epoch++
    byUser.delete(key)
  }
  const forgetClient = (clientId: string) => {
    epoch++
    clients.delete(clientId)
  }
  const forgetAll = () => {
    epoch++
    byUser.clear()
    clients.clear()
    answers.clear()
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

  const clock = yield* Clock.Clock
  const stopLocal = onLiveStateChanged((change) => {
    const key = change.kind === "user" ? userKey(change.environmentId, change.userId) : clientKey(change.clientId)
    if (change.kind === "user") forgetUser(key)
    else forgetClient(change.clientId)
    pendingUntil.set(key, clock.currentTimeMillisUnsafe() + LOCAL_PENDING_MS)
  })
  yield* Effect.addFinalizer(() => Effect.sync(stopLocal))
  // This replica's change of an Environment (status, domains, keys) ends its answers at once.
  const stopEnvironment = onEnvironmentChanged((environmentId) => {
    for (const [key, entry] of answers) if (entry.environmentId === environmentId) answers.delete(key)
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
    Effect.ensuring(Effect.sync(() => {
      listening = false
      forgetAll()
    })),
    Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.logWarning("live-state LISTEN connection lost; reading from Postgres until it is back", cause)),
  )
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(listenOnce, Effect.sleep(RELISTEN_AFTER))))

  const read = (environmentId: string, userId: string, sessionId: string) => Effect.gen(function* () {
    const key = userKey(environmentId, userId)
    const held = byUser.get(key)?.get(sessionId)
    // A remembered expiry that has passed is read again: a later one is not announced (sql/0140).
    const nowMs = clock.currentTimeMillisUnsafe()
    if (held !== undefined && listening && held.session_idle_expires_at!.getTime() > nowMs &&
      held.session_absolute_expires_at!.getTime() > nowMs) return held
    const startedAt = epoch
    const row = yield* liveState(environmentId, userId, sessionId)
    // Kept only when nothing was invalidated meanwhile, LISTEN is up, the user has no local
    // write in flight, and the row is complete (a missing session is read again next time).
    if (row === undefined || row.session_id === null || !mayKeep(key, startedAt)) return row
    let sessions = byUser.get(key)
    if (sessions === undefined) {
      if (byUser.size >= CAPACITY) byUser.delete(byUser.keys().next().value!)
      sessions = new Map()
      byUser.set(key, sessions)
    }
    sessions.set(sessionId, row)
    return row
  })

  const readClient = (environmentId: string, clientId: string) => Effect.gen(function* () {
    const held = clients.get(clientId)
    if (held !== undefined && held.environmentId === environmentId && listening) return held.row
    const startedAt = epoch
    const row = yield* clientById(environmentId, clientId)
    if (row === undefined || !mayKeep(clientKey(clientId), startedAt)) return row
    if (clients.size >= CAPACITY) clients.delete(clients.keys().next().value!)
    clients.set(clientId, { environmentId, row })
    return row
  })

  const rememberAnswer = (key: string, d: AnswerDependencies, answer: RememberedAnswer) => {
    const userKeyOf = userKey(d.environmentId, d.userId)
    const sessions = byUser.get(userKeyOf)
    if (!listening || sessions === undefined || sessions.get(d.sessionId) !== d.live) return
    const client = d.client === undefined ? undefined : clients.get(d.client.id)
    if (d.client !== undefined && client?.row !== d.client) return
    const nowMs = clock.currentTimeMillisUnsafe()
    answers.delete(key)
    if (answers.size >= ANSWER_CAPACITY) answers.delete(answers.keys().next().value!)
    answers.set(key, {
      answer, environmentId: d.environmentId, userKey: userKeyOf, sessions, live: d.live, clientId: d.client?.id, client,
      until: Math.min(d.validUntilMs, nowMs + ANSWER_TTL_MS),
    })
  }

  const answer = (key: string) => {
    const entry = answers.get(key)
    if (entry === undefined) return undefined
    const nowMs = clock.currentTimeMillisUnsafe()
    const live = entry.live
    const current = listening && entry.until > nowMs && byUser.get(entry.userKey) === entry.sessions &&
      entry.sessions.get(live.session_id!) === live && live.session_idle_expires_at!.getTime() > nowMs &&
      live.session_absolute_expires_at!.getTime() > nowMs &&
      (entry.clientId === undefined || clients.get(entry.clientId) === entry.client)
    if (current) return entry.answer
    answers.delete(key)
    return undefined
  }

  return LiveStateCache.of({ read, readClient, listening: () => listening, size: () => byUser.size, rememberAnswer, answer })
}))

/** The live state through this replica's memory when the server runs one, else from Postgres. */
export const readLiveState = (environmentId: string, userId: string, sessionId: string) =>
  Effect.flatMap(Effect.serviceOption(LiveStateCache), (cache) => Option.isSome(cache)
    ? cache.value.read(environmentId, userId, sessionId)
    : liveState(environmentId, userId, sessionId))

/** A client row through this replica's memory when the server runs one, else from Postgres. */
export const readClientRow = (environmentId: string, clientId: string) =>
  Effect.flatMap(Effect.serviceOption(LiveStateCache), (cache) => Option.isSome(cache)
    ? cache.value.readClient(environmentId, clientId)
    : clientById(environmentId, clientId))
