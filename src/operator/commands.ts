import { Effect } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { Audit } from "../platform/audit.js"
import type { AppConfig, Config } from "../platform/config.js"
import type { ConfigInvalid } from "../platform/config-invalid.js"
import type { Crypto } from "../platform/crypto.js"
import type { HmacDataKeys } from "../platform/hmac-data-keys.js"
import type { Ids } from "../platform/ids.js"
import type { Keys } from "../platform/keys/service.js"
import type { Tenancy } from "../tenancy/service.js"
import type { MasterKeyRotationRefused } from "./master-key/errors.js"
import type {
  Args,
  CommandName,
  MasterKeyRotateOptions,
  PlatformUserCreateOptions,
  SigningKeysRotateOptions,
} from "./command-line.js"
import type { PurgeArgs } from "./purge-args.js"
import { bootstrap } from "../tenancy/bootstrap.js"
import { runPurge } from "./purge-deleted-users.js"
import { rotateMasterKey } from "./master-key/service.js"
import { createDashboardSessionCommand, createPlatformUserCommand, type OperatorRefused } from "./platform-users.js"
import { rotateSigningKey, type UnknownEnvironment } from "./signing-keys.js"

// What each operator command does, by the name ./command-line.ts gives it (its usage and flags).

export interface Outcome {
  /** The one JSON object printed with --json. */
  readonly json: Record<string, unknown>
  /** Extra line for people (the JSON is printed as `key  value` lines otherwise). */
  readonly note?: string
  /** Non-zero when the command did its work but the job is not finished (run it again). */
  readonly exitCode?: number
}

/** What a command may fail with: a refusal it explains, or the database failing. */
export type CommandFailure =
  | ConfigInvalid
  | UnknownEnvironment
  | MasterKeyRotationRefused
  | OperatorRefused
  | SqlError.SqlError

/** The application's services a command runs with (the CLI provides the application layer). */
export type CommandServices = SqlClient.SqlClient | Config | Tenancy | Audit | Crypto | HmacDataKeys | Keys | Ids

export type CommandRun = (args: Args, config: AppConfig) => Effect.Effect<Outcome, CommandFailure, CommandServices>

export const COMMAND_RUNS: Readonly<Record<CommandName, CommandRun>> = {
  bootstrap: () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const result = yield* sql.withTransaction(bootstrap)
      return { json: { ...result }, note: "The API key is shown only now: store it." }
    }),
  "master-key rotate": (args) =>
    Effect.gen(function* () {
      const report = yield* rotateMasterKey(args.parsed as MasterKeyRotateOptions)
      return report.completed
        ? {
            json: { ...report },
            note: `Completed: restart every process without MASTER_KEY_PREVIOUS after ${report.old_key_needed_until} (step 4).`,
          }
        : { json: { ...report }, note: "Not finished (values changed while it ran): run it again.", exitCode: 3 }
    }),
  "signing-keys rotate": (args) =>
    Effect.gen(function* () {
      const { environmentId, publishAheadMs } = args.parsed as SigningKeysRotateOptions
      const result = yield* rotateSigningKey(environmentId, publishAheadMs)
      return { json: { ...result } }
    }),
  "purge-deleted-users": (args) => Effect.map(runPurge(args.parsed as PurgeArgs), (report) => ({ json: report })),
  "platform-user create": (args) =>
    Effect.gen(function* () {
      const result = yield* createPlatformUserCommand(args.parsed as PlatformUserCreateOptions)
      return { json: result }
    }),
  "dashboard-session create": (args, config) =>
    Effect.gen(function* () {
      const result = yield* createDashboardSessionCommand(config, args.parsed as string)
      return { json: result, note: "The session is shown only now." }
    }),
}
