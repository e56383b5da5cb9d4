import { Clock, Effect } from "effect"
import { Crypto, keyId } from "../../platform/crypto.js"
import { MasterKeyRotationRefused } from "./errors.js"
import * as repo from "./repo.js"
import { SEALED_VALUES, type SealedValues } from "./sealed-values.js"
import { withCallSpan } from "../../platform/observability/span.js"

export interface RotationReport {
  readonly from_key_id: string
  readonly to_key_id: string
  /** True once nothing sealed under another key remains and MASTER_KEY_PREVIOUS may be dropped. */
  readonly completed: boolean
  /** Values re-sealed under the current key, per `<table>.<column>` (over every run of this rotation). */
  readonly resealed: Record<string, number>
  /** Values still sealed under another key (a row held by a running job is left for the next run). */
  readonly remaining: Record<string, number>
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
 * Completes a master-key rotation (issue 12; docs/master-key-rotation.md): every value sealed
 * under MASTER_KEY_PREVIOUS is re-sealed under MASTER_KEY, then the database forgets the old
 * key's check so the service may start without it. Resumable and safe while the service runs.
 */
export const rotateMasterKey = (options: { readonly batchSize: number }) => Effect.gen(function* () {
  const crypto = yield* Crypto
  const previous = crypto.previousKey
  if (previous === undefined) {
    return yield* new MasterKeyRotationRefused({ message: "Set MASTER_KEY to the new key and MASTER_KEY_PREVIOUS to the old one" })
  }
  const currentCheck = crypto.keyCheck()
  const previousCheck = crypto.keyCheck(previous)
  const state = yield* repo.keyCheckState
  if (state?.check_value !== currentCheck || (state.previous_check_value !== null && state.previous_check_value !== previousCheck)) {
    return yield* new MasterKeyRotationRefused({ message: "The database is not rotating from MASTER_KEY_PREVIOUS to MASTER_KEY: start the service once with these keys first" })
  }
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
  if (completed && state.previous_check_value !== null) yield* repo.finishRotation(currentCheck, previousCheck)
  return { from_key_id: keyId(previous), to_key_id: crypto.currentKeyId, completed, resealed, remaining } satisfies RotationReport
}).pipe(withCallSpan("operator.rotateMasterKey"))
