import { Clock, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Crypto, keyId } from "../../platform/crypto.js"
import { MasterKeyRotationRefused } from "./errors.js"
import * as repo from "./repo.js"
import { SEALED_VALUES, type SealedValues } from "./sealed-values.js"
import { withCallSpan } from "../../platform/observability/span.js"
import { PROCESS_HEARTBEAT, ProcessHeartbeat, type ProcessKind } from "../../platform/process-heartbeat.js"
import { pauseRealTime } from "../../platform/real-time.js"

export interface RotationReport {
  readonly from_key_id: string
  readonly to_key_id: string
  /** True once nothing sealed under another key remains and MASTER_KEY_PREVIOUS may be dropped. */
  readonly completed: boolean
  /** Values re-sealed under the current key, per `<table>.<column>` (over every run of this rotation). */
  readonly resealed: Record<string, number>
  /** Values still sealed under another key (a row held by a running job is left for the next run). */
  readonly remaining: Record<string, number>
  /** Once completed: processes may start without MASTER_KEY_PREVIOUS from then on (OLD_KEY_NEEDED_FOR_MS). */
  readonly old_key_needed_until?: string
}

/** Passes over everything before giving up on values that keep changing under us. */
const MAX_PASSES = 3

/**
 * Re-seals one sealed column from `after` on, batch by batch, recording the cursor after each
 * batch (so a stopped run resumes there). Each value is replaced by compare-and-set: a value
 * changed meanwhile by the running service (e.g. a rotated webhook secret, already sealed
 * under the current key) is left as the service wrote it.
 */
const resealColumn = Effect.fnUntraced(function* (
  v: SealedValues,
  toKeyId: string,
  batchSize: number,
  fromStart: boolean,
) {
  const crypto = yield* Crypto
  const progress = yield* repo.loadProgress(toKeyId, v.name, new Date(yield* Clock.currentTimeMillis))
  let cursor = fromStart ? "" : progress.last_row
  let resealed = progress.resealed
  for (;;) {
    const rows = yield* repo.staleBatch(v, crypto.currentKeyId, cursor, batchSize)
    for (const r of rows) {
      const plain = yield* crypto.open(v.context(r.fields), r.sealed).pipe(
        Effect.mapError(
          (e) =>
            new MasterKeyRotationRefused({
              message: `${v.name} row ${r.row} cannot be opened (${e.reason}) with MASTER_KEY or MASTER_KEY_PREVIOUS: it was sealed under another key`,
            }),
        ),
      )
      const next = yield* crypto.seal(v.context(r.fields), plain)
      if (yield* repo.replaceSealed(v, r.row, r.sealed, next)) resealed++
    }
    if (rows.length > 0) cursor = rows[rows.length - 1]!.row
    const done = rows.length < batchSize
    yield* repo.saveProgress(toKeyId, v.name, {
      last_row: cursor,
      resealed,
      completed: done,
      now: new Date(yield* Clock.currentTimeMillis),
    })
    if (done) return resealed
  }
})

/**
 * What the old key still verifies after the re-sealing: Email OTP codes and email-change codes
 * (5 minutes) and social login states (10 minutes) HMAC'd under it. A start without
 * MASTER_KEY_PREVIOUS is refused until this long after the rotation completed (step 4).
 */
export const OLD_KEY_NEEDED_FOR_MS = 10 * 60_000

const PROCESS_LABELS: Record<ProcessKind, readonly [string, string]> = {
  server: ["server process", "server processes"],
  worker: ["worker process", "worker processes"],
  "server+worker": ["server+worker process (npm start)", "server+worker processes (npm start)"],
  cli: ["operator command", "operator commands"],
}

/** "1 server process and 2 worker processes" */
const countByKind = (processes: ReadonlyArray<repo.LiveProcess>) => {
  const parts = (Object.keys(PROCESS_LABELS) as Array<ProcessKind>).flatMap((kind) => {
    const n = processes.filter((p) => p.kind === kind).length
    return n === 0 ? [] : [`${n} ${PROCESS_LABELS[kind][n === 1 ? 0 : 1]}`]
  })
  return parts.length <= 1 ? parts.join("") : `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`
}

const SHOWN = 5

/** Up to SHOWN processes, described; then how many more. */
const listed = (processes: ReadonlyArray<repo.LiveProcess>, describe: (p: repo.LiveProcess) => string) =>
  processes.slice(0, SHOWN).map(describe).join("; ") +
  (processes.length > SHOWN ? `; and ${processes.length - SHOWN} more` : "")

const describeProcess = (p: repo.LiveProcess) =>
  `${p.kind} on ${p.host} (pid ${p.pid}) with MASTER_KEY ${p.master_key_id}${p.previous_master_key_id === null ? " only" : ` and MASTER_KEY_PREVIOUS ${p.previous_master_key_id}`}`

const describeSealing = (p: repo.LiveProcess) =>
  `${p.kind} on ${p.host} (pid ${p.pid}) still sealing under ${p.sealing_key_id ?? "an unknown key (a process of an earlier version)"}`

/**
 * Refused unless every live process (src/platform/process-heartbeat.ts) holds MASTER_KEY=<new>
 * and, until the rotation is finished, MASTER_KEY_PREVIOUS=<old>: one holding the old key only
 * cannot open what is sealed under the new key once switched, nor what is re-sealed (its requests
 * would fail with 500); nor while the database holds sealed values the registry does not know.
 * Then records the switch (once). Runs in one transaction with the key-check row locked, so a
 * process passing its key check right now is either seen here or, starting after, told by the
 * moved check to seal under the new key (or refused, holding the old key only). Returns the
 * key-check row as it was.
 */
const switchOnceEveryProcessIsReady = Effect.fnUntraced(function* (
  currentKeyId: string,
  previousKeyId: string,
  currentCheck: string,
  previousCheck: string,
) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const state = (yield* repo.lockKeyCheckState)!
      const switched = state.check_value === currentCheck && state.previous_check_value === previousCheck
      const finished = state.check_value === currentCheck && state.previous_check_value === null
      const expanded = state.check_value === previousCheck && state.previous_check_value === null
      if (!switched && !finished && !expanded) {
        return yield* new MasterKeyRotationRefused({
          message:
            "The database is not rotating from MASTER_KEY_PREVIOUS to MASTER_KEY: MASTER_KEY_PREVIOUS must be the key the database uses (or, once switched, MASTER_KEY the new one)",
        })
      }
      const live = yield* repo.liveProcesses(PROCESS_HEARTBEAT.liveForMs)
      const lacking = live.filter(
        (p) => p.master_key_id !== currentKeyId || (!finished && p.previous_master_key_id !== previousKeyId),
      )
      if (lacking.length > 0) {
        return yield* new MasterKeyRotationRefused({
          message:
            `Refused, nothing re-sealed: ${countByKind(lacking)} ${lacking.length === 1 ? "runs" : "run"} without MASTER_KEY=<new> (key id ${currentKeyId}) ` +
            `and MASTER_KEY_PREVIOUS=<old> (key id ${previousKeyId}): ${listed(lacking, describeProcess)}. Restart every server and worker with both keys ` +
            `(docs/master-key-rotation.md, step 2), then run this again; a process that stopped without shutting down stops counting ` +
            `${PROCESS_HEARTBEAT.liveForMs / 1000} s after its last heartbeat`,
        })
      }
      const unregistered = yield* repo.unregisteredSealedValues
      if (unregistered.length > 0) {
        return yield* new MasterKeyRotationRefused({
          message: `Sealed values unknown to the rotation: ${unregistered.join(", ")}`,
        })
      }
      if (expanded) yield* repo.recordSwitch(currentCheck, previousCheck)
      return state
    }),
  )
})

/** How often the rotation looks whether every live process has acknowledged the switch. */
const ACKNOWLEDGEMENT_POLL_MS = 250

/**
 * Waits until every live process seals under MASTER_KEY (`sealing_key_id`, written at each
 * heartbeat), for at most `timeoutMs` of real time: other processes' heartbeats are scheduling,
 * which no test clock drives (src/platform/real-time.ts). Refused (nothing re-sealed yet) when
 * one has not acknowledged by then: re-sealing while it still seals under the old key would
 * leave what it writes behind.
 */
const awaitAcknowledgements = Effect.fnUntraced(function* (currentKeyId: string, timeoutMs: number) {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const pending = (yield* repo.liveProcesses(PROCESS_HEARTBEAT.liveForMs)).filter(
      (p) => p.sealing_key_id !== currentKeyId,
    )
    if (pending.length === 0) return
    if (performance.now() >= deadline) {
      return yield* new MasterKeyRotationRefused({
        message:
          `Switched (new values are sealed under MASTER_KEY, key id ${currentKeyId}), but nothing re-sealed: ${countByKind(pending)} ` +
          `${pending.length === 1 ? "has" : "have"} not acknowledged the switch within ${timeoutMs / 1000} s: ${listed(pending, describeSealing)}. ` +
          `A process acknowledges at its heartbeat (every ${PROCESS_HEARTBEAT.intervalMs / 1000} s); one that stopped without shutting down ` +
          `stops counting ${PROCESS_HEARTBEAT.liveForMs / 1000} s after its last heartbeat. Check that it runs and reaches the database ` +
          `(or stop it), then run this again (docs/master-key-rotation.md, step 3)`,
      })
    }
    yield* pauseRealTime(ACKNOWLEDGEMENT_POLL_MS)
  }
})

/**
 * Completes a master-key rotation (docs/master-key-rotation.md, expand/contract): refused unless
 * every live process holds both keys; records the switch, after which new values are sealed
 * under MASTER_KEY; waits until every live process has acknowledged it; then re-seals every
 * value sealed under MASTER_KEY_PREVIOUS under MASTER_KEY, and the database forgets the old
 * key's check so the service may start without it (once OLD_KEY_NEEDED_FOR_MS has passed).
 * Resumable and safe while the service runs.
 */
export const rotateMasterKey = Effect.fnUntraced(function* (options: {
  readonly batchSize: number
  readonly acknowledgementTimeoutMs: number
}) {
  const crypto = yield* Crypto
  const previous = crypto.previousKey
  if (previous === undefined) {
    return yield* new MasterKeyRotationRefused({
      message: "Set MASTER_KEY to the new key and MASTER_KEY_PREVIOUS to the old one",
    })
  }
  const currentCheck = crypto.keyCheck()
  const previousCheck = crypto.keyCheck(previous)
  const state = yield* switchOnceEveryProcessIsReady(crypto.currentKeyId, keyId(previous), currentCheck, previousCheck)
  // This process re-seals under MASTER_KEY, and acknowledges the switch at once (as an operator
  // command it is listed among the live processes; in a test it may run without a heartbeat).
  crypto.sealUnderMasterKey()
  const heartbeat = yield* Effect.serviceOption(ProcessHeartbeat)
  if (Option.isSome(heartbeat)) yield* heartbeat.value.beat
  yield* awaitAcknowledgements(crypto.currentKeyId, options.acknowledgementTimeoutMs)
  const resealed: Record<string, number> = {}
  let remaining: Record<string, number> = {}
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    for (const v of SEALED_VALUES)
      resealed[v.name] = yield* resealColumn(v, crypto.currentKeyId, options.batchSize, pass > 0)
    remaining = {}
    for (const v of SEALED_VALUES) {
      const n = yield* repo.countStale(v, crypto.currentKeyId)
      if (n > 0) remaining[v.name] = n
    }
    if (Object.keys(remaining).length === 0) break
  }
  const completed = Object.keys(remaining).length === 0
  let oldKeyNeededUntil = state.old_key_needed_until ?? undefined
  const finishedBefore = state.check_value === currentCheck && state.previous_check_value === null
  if (completed && !finishedBefore) {
    oldKeyNeededUntil = new Date((yield* Clock.currentTimeMillis) + OLD_KEY_NEEDED_FOR_MS)
    yield* repo.finishRotation(currentCheck, previousCheck, oldKeyNeededUntil)
  }
  return {
    from_key_id: keyId(previous),
    to_key_id: crypto.currentKeyId,
    completed,
    resealed,
    remaining,
    ...(completed && oldKeyNeededUntil !== undefined ? { old_key_needed_until: oldKeyNeededUntil.toISOString() } : {}),
  } satisfies RotationReport
}, withCallSpan("operator.rotateMasterKey"))
