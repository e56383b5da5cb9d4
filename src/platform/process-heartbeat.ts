import { hostname } from "node:os"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { withinDeadline } from "./bounded-pg-client.js"
import { Crypto, keyId } from "./crypto.js"

/**
 * Which processes run, and with which master keys (sql/0174; decisions: Production operation,
 * "A rotation waits for every live process"). A process records its row when its master key is
 * checked at start, in the key check's transaction (src/platform/master-key.ts), beats every
 * PROCESS_HEARTBEAT.intervalMs and deletes the row when it stops cleanly. `master-key rotate`
 * reads the rows beaten within PROCESS_HEARTBEAT.liveForMs: a process that holds the old key
 * only keeps sealing under it and cannot open what the rotation re-seals, so the rotation waits.
 *
 * Liveness is judged by the database's clock (`now()`), never a process's, as the worker
 * heartbeat (src/jobs/heartbeat.ts): processes run on several hosts. It is scheduling, not a
 * rule of the spec, so the Effect Clock has no say in it.
 */

export type ProcessKind = "server" | "worker" | "server+worker" | "cli"

export const PROCESS_HEARTBEAT = {
  intervalMs: 5_000,
  /**
   * A process silent this long is presumed gone (24 missed beats). Generous on purpose: the cost
   * of a long bound is a rotation that waits two minutes after a crash; the cost of a short one
   * is a rotation that runs while a slow or briefly cut-off process still seals under the old key.
   */
  liveForMs: 120_000,
} as const

export interface ProcessRegistration {
  readonly processId: string
  readonly kind: ProcessKind
  readonly host: string
  readonly pid: number
  /** Fingerprints of MASTER_KEY and MASTER_KEY_PREVIOUS (`keyId`), never the keys. */
  readonly masterKeyId: string
  readonly previousMasterKeyId: string | undefined
}

/** This process, as its heartbeat row names it. */
export const processRegistration = (kind: ProcessKind) => Effect.gen(function* () {
  const crypto = yield* Crypto
  return {
    processId: `prc_${process.pid}_${yield* crypto.randomToken(12)}`,
    kind, host: hostname(), pid: process.pid,
    masterKeyId: crypto.currentKeyId,
    previousMasterKeyId: crypto.previousKey === undefined ? undefined : keyId(crypto.previousKey),
  } satisfies ProcessRegistration
})

/** Records (or renews) the row; a row removed meanwhile (a stale sweep) comes back whole. */
export const recordBeat = (p: ProcessRegistration) => SqlClient.SqlClient.use((sql) => sql`insert into process_heartbeats
    (process_id, kind, host, pid, master_key_id, previous_master_key_id, started_at, beat_at)
    values (${p.processId}, ${p.kind}, ${p.host}, ${p.pid}, ${p.masterKeyId}, ${p.previousMasterKeyId ?? null}, now(), now())
    on conflict (process_id) do update set beat_at = excluded.beat_at`).pipe(Effect.asVoid)

export const forgetProcess = (processId: string) =>
  SqlClient.SqlClient.use((sql) => sql`delete from process_heartbeats where process_id = ${processId}`).pipe(Effect.asVoid)

/** How long a stopping process waits to delete its row (a database that is down must not hold the shutdown). */
const FORGET_WITHIN_MS = 2_000

/** Deletes the row on the way out, giving up quietly after FORGET_WITHIN_MS (the row then goes stale). */
export const forgetProcessOnExit = (processId: string) =>
  withinDeadline(forgetProcess(processId), FORGET_WITHIN_MS, "heartbeat removal").pipe(Effect.ignore)

/**
 * Beats while the process runs and removes the row when it stops. The first row was written by
 * the key check at start; a failed beat (the database away) is logged and retried next time.
 * A beat also notices when the database has rotated to a key this process does not hold as
 * MASTER_KEY (a process that was cut off, presumed gone, while a rotation ran): it then logs an
 * error on each beat, since everything it seals is under a key about to be destroyed.
 */
export const ProcessHeartbeatLive = (registration: ProcessRegistration) => Layer.effectDiscard(Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const crypto = yield* Crypto
  const ownCheck = crypto.keyCheck()
  const beat = Effect.gen(function* () {
    yield* recordBeat(registration)
    const [row] = yield* sql<{ check_value: string }>`select check_value from master_key_check`
    if (row !== undefined && row.check_value !== ownCheck) {
      yield* Effect.logError("the database has moved to another master key than this process's MASTER_KEY: restart this process with the new key as MASTER_KEY (docs/master-key-rotation.md)")
    }
  }).pipe(
    Effect.provideService(SqlClient.SqlClient, sql),
    Effect.catchCause((cause) => Effect.logWarning("process heartbeat failed; retried at the next beat", cause)),
  )
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(PROCESS_HEARTBEAT.intervalMs), beat)))
  yield* Effect.addFinalizer(() => forgetProcessOnExit(registration.processId).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
}))
