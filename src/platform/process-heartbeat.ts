import { hostname } from "node:os"
import { Context, Effect, Layer } from "effect"
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
 * The beat also carries the switch of a rotation (expand/contract, docs/master-key-rotation.md):
 * each beat writes the key the process seals under (`sealing_key_id`) and reads the key check in
 * the same statement; a process holding both keys that reads the switch seals under MASTER_KEY
 * from then on, and its next beat acknowledges it. `master-key rotate` re-seals nothing until
 * every live process has acknowledged.
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
export const processRegistration = Effect.fnUntraced(function* (kind: ProcessKind) {
  const crypto = yield* Crypto
  return {
    processId: `prc_${process.pid}_${yield* crypto.randomToken(12)}`,
    kind,
    host: hostname(),
    pid: process.pid,
    masterKeyId: crypto.currentKeyId,
    previousMasterKeyId: crypto.previousKey === undefined ? undefined : keyId(crypto.previousKey),
  } satisfies ProcessRegistration
})

const upsertBeat = (
  sql: SqlClient.SqlClient,
  p: ProcessRegistration,
  sealingKeyId: string,
) => sql`insert into process_heartbeats
    (process_id, kind, host, pid, master_key_id, previous_master_key_id, sealing_key_id, started_at, beat_at)
    values (${p.processId}, ${p.kind}, ${p.host}, ${p.pid}, ${p.masterKeyId}, ${p.previousMasterKeyId ?? null}, ${sealingKeyId}, now(), now())
    on conflict (process_id) do update set beat_at = excluded.beat_at, sealing_key_id = excluded.sealing_key_id`

/**
 * Records (or renews) the row with the key the process seals under; a row removed meanwhile (a
 * stale sweep) comes back whole.
 */
export const recordBeat = (p: ProcessRegistration, sealingKeyId: string) =>
  SqlClient.SqlClient.use((sql) => upsertBeat(sql, p, sealingKeyId)).pipe(Effect.asVoid)

/** A beat: renews the row and reads the database's key check, in one statement. */
const beatReadingKeyCheck = (p: ProcessRegistration, sealingKeyId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<{
        check_value: string
      }>`with beat as (${upsertBeat(sql, p, sealingKeyId)}) select check_value from master_key_check`,
  ).pipe(Effect.map((rows) => rows[0]?.check_value))

export const forgetProcess = (processId: string) =>
  SqlClient.SqlClient.use((sql) => sql`delete from process_heartbeats where process_id = ${processId}`).pipe(
    Effect.asVoid,
  )

/** How long a stopping process waits to delete its row (a database that is down must not hold the shutdown). */
const FORGET_WITHIN_MS = 2_000

/** Deletes the row on the way out, giving up quietly after FORGET_WITHIN_MS (the row then goes stale). */
export const forgetProcessOnExit = (processId: string) =>
  withinDeadline(forgetProcess(processId), FORGET_WITHIN_MS, "heartbeat removal").pipe(Effect.ignore)

/** This process's heartbeat: `beat` runs one beat now (the rotation acknowledges its own switch at once). */
export class ProcessHeartbeat extends Context.Service<
  ProcessHeartbeat,
  {
    readonly beat: Effect.Effect<void>
  }
>()("platform/ProcessHeartbeat") {}

/**
 * Beats while the process runs and removes the row when it stops. The first row was written by
 * the key check at start; a failed beat (the database away) is logged and retried next time.
 *
 * A beat writes the key this process seals under, then acts on the key check it read: when the
 * database has switched to this process's MASTER_KEY and the process still seals under
 * MASTER_KEY_PREVIOUS, it switches (one reference swapped, src/platform/crypto.ts), and the next
 * beat acknowledges it. Acknowledging one interval after the switch leaves a request that sealed
 * under the old key just before it that long to commit before the rotation re-seals.
 * A beat also notices when the database has moved to a key this process does not hold as
 * MASTER_KEY (a process that was cut off, presumed gone, while a rotation ran): it then logs an
 * error on each beat, since everything it seals is under a key about to be destroyed.
 */
export const ProcessHeartbeatLive = (registration: ProcessRegistration) =>
  Layer.effect(
    ProcessHeartbeat,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const crypto = yield* Crypto
      const ownCheck = crypto.keyCheck()
      const previousCheck = crypto.previousKey === undefined ? undefined : crypto.keyCheck(crypto.previousKey)
      const beat = Effect.gen(function* () {
        const check = yield* beatReadingKeyCheck(registration, crypto.sealingKeyId())
        if (check === undefined || check === previousCheck) return
        if (check === ownCheck) {
          if (crypto.sealUnderMasterKey())
            yield* Effect.logInfo(
              "master-key rotation: the database has switched; this process now seals under MASTER_KEY",
            )
          return
        }
        yield* Effect.logError(
          "the database has moved to another master key than this process's MASTER_KEY: restart this process with the new key as MASTER_KEY (docs/master-key-rotation.md)",
        )
      }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.catchCause((cause) => Effect.logWarning("process heartbeat failed; retried at the next beat", cause)),
      )
      yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(PROCESS_HEARTBEAT.intervalMs), beat)))
      yield* Effect.addFinalizer(() =>
        forgetProcessOnExit(registration.processId).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
      )
      return ProcessHeartbeat.of({ beat })
    }),
  )
