import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Crypto, keyId } from "../../platform/crypto.js"
import { MasterKeyRotationRefused } from "./errors.js"
import * as repo from "./repo.js"
import { SEALED_VALUES, type SealedValues } from "./sealed-values.js"
import { withCallSpan } from "../../platform/observability/span.js"
import { PROCESS_HEARTBEAT, type ProcessKind } from "../../platform/process-heartbeat.js"

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
const resealColumn = (v: SealedValues, toKeyId: string, batchSize: number, fromStart: boolean) => Effect.gen(function* () {
  const crypto = yield* Crypto
  const progress = yield* repo.loadProgress(toKeyId, v.name, new Date(yield* Clock.currentTimeMillis))
  let cursor = fromStart ? "" : progress.last_row
  let resealed = progress.resealed
  for (;;) {
    const rows = yield* repo.staleBatch(v, crypto.currentKeyId, cursor, batchSize)
    for (const r of rows) {
      const plain = yield* crypto.open(v.context(r.fields), r.sealed).pipe(Effect.mapError((e) => new MasterKeyRotationRefused({
        message: `${v.name} row ${r.row} cannot be opened (${e.reason}) with MASTER_KEY or MASTER_KEY_PREVIOUS: it was sealed under another key`,
      })))
      const next = yield* crypto.seal(v.context(r.fields), plain)
      if (yield* repo.replaceSealed(v, r.row, r.sealed, next)) resealed++
    }
    if (rows.length > 0) cursor = rows[rows.length - 1]!.row
    const done = rows.length < batchSize
    yield* repo.saveProgress(toKeyId, v.name, { last_row: cursor, resealed, completed: done, now: new Date(yield* Clock.currentTimeMillis) })
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

const describeProcess = (p: repo.LiveProcess) =>
  `${p.kind} on ${p.host} (pid ${p.pid}) with MASTER_KEY ${p.master_key_id}${p.previous_master_key_id === null ? " only" : ` and MASTER_KEY_PREVIOUS ${p.previous_master_key_id}`}`

/**
 * Refused unless every live process (src/platform/process-heartbeat.ts) holds MASTER_KEY=<new>
 * and, until the rotation is finished, MASTER_KEY_PREVIOUS=<old>: one holding the old key only
 * keeps sealing under it, and cannot open what is re-sealed (its requests fail with 500). Runs in
 * one transaction with the key-check row locked, so a process passing its key check right now is
 * either seen here or, starting after, refused by the moved check. Returns the key-check row.
 */
const requireEveryProcessReady = (currentKeyId: string, previousKeyId: string, currentCheck: string, previousCheck: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function* () {
      const state = (yield* repo.lockKeyCheckState)!
      const begun = state.check_value === currentCheck && state.previous_check_value === previousCheck
      const finished = state.check_value === currentCheck && state.previous_check_value === null
      const notBegun = state.check_value === previousCheck && state.previous_check_value === null
      if (!begun && !finished && !notBegun) {
        return yield* new MasterKeyRotationRefused({ message: "The database is not rotating from MASTER_KEY_PREVIOUS to MASTER_KEY: start the service once with these keys first" })
      }
      const live = yield* repo.liveProcesses(PROCESS_HEARTBEAT.liveForMs)
      const lacking = live.filter((p) => p.master_key_id !== currentKeyId || (!finished && p.previous_master_key_id !== previousKeyId))
      if (lacking.length > 0) {
        const listed = lacking.slice(0, SHOWN).map(describeProcess).join("; ") + (lacking.length > SHOWN ? `; and ${lacking.length - SHOWN} more` : "")
        return yield* new MasterKeyRotationRefused({
          message: `Refused, nothing re-sealed: ${countByKind(lacking)} ${lacking.length === 1 ? "runs" : "run"} without MASTER_KEY=<new> (key id ${currentKeyId}) `
            + `and MASTER_KEY_PREVIOUS=<old> (key id ${previousKeyId}): ${listed}. Restart every server and worker with both keys `
            + `(docs/master-key-rotation.md, step 2), then run this again; a process that stopped without shutting down stops counting `
            + `${PROCESS_HEARTBEAT.liveForMs / 1000} s after its last heartbeat`,
        })
      }
      if (notBegun) {
        return yield* new MasterKeyRotationRefused({
          message: "Refused, nothing re-sealed: no server or worker has started with MASTER_KEY=<new> and MASTER_KEY_PREVIOUS=<old> yet: "
            + "start them with both keys first (docs/master-key-rotation.md, step 2)",
        })
      }
      return state
    }))
  })

/**
 * Completes a master-key rotation (issue 12; docs/master-key-rotation.md): every value sealed
 * under MASTER_KEY_PREVIOUS is re-sealed under MASTER_KEY, then the database forgets the old
 * key's check so the service may start without it (once OLD_KEY_NEEDED_FOR_MS has passed).
 * Resumable and safe while the service runs, once every live process holds both keys.
 */
export const rotateMasterKey = (options: { readonly batchSize: number }) => Effect.gen(function* () {
  const crypto = yield* Crypto
  const previous = crypto.previousKey
  if (previous === undefined) {
    return yield* new MasterKeyRotationRefused({ message: "Set MASTER_KEY to the new key and MASTER_KEY_PREVIOUS to the old one" })
  }
  const currentCheck = crypto.keyCheck()
  const previousCheck = crypto.keyCheck(previous)
  const state = yield* requireEveryProcessReady(crypto.currentKeyId, keyId(previous), currentCheck, previousCheck)
  const unregistered = yield* repo.unregisteredSealedValues
  if (unregistered.length > 0) {
    return yield* new MasterKeyRotationRefused({ message: `Sealed values unknown to the rotation: ${unregistered.join(", ")}` })
  }
  const resealed: Record<string, number> = {}
  let remaining: Record<string, number> = {}
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    for (const v of SEALED_VALUES) resealed[v.name] = yield* resealColumn(v, crypto.currentKeyId, options.batchSize, pass > 0)
    remaining = {}
    for (const v of SEALED_VALUES) {
      const n = yield* repo.countStale(v, crypto.currentKeyId)
      if (n > 0) remaining[v.name] = n
    }
    if (Object.keys(remaining).length === 0) break
  }
  const completed = Object.keys(remaining).length === 0
  let oldKeyNeededUntil = state.old_key_needed_until ?? undefined
  if (completed && state.previous_check_value !== null) {
    oldKeyNeededUntil = new Date((yield* Clock.currentTimeMillis) + OLD_KEY_NEEDED_FOR_MS)
    yield* repo.finishRotation(currentCheck, previousCheck, oldKeyNeededUntil)
  }
  return {
    from_key_id: keyId(previous), to_key_id: crypto.currentKeyId, completed, resealed, remaining,
    ...(completed && oldKeyNeededUntil !== undefined ? { old_key_needed_until: oldKeyNeededUntil.toISOString() } : {}),
  } satisfies RotationReport
}).pipe(withCallSpan("operator.rotateMasterKey"))
