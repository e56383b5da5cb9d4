import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { AppConfig } from "../platform/config.js"
import { ConfigInvalid } from "../platform/config-invalid.js"
import { bootstrap } from "../tenancy/bootstrap.js"
import { parsePurgeArgs, type PurgeArgs, purgeUsage, runPurge } from "./purge-deleted-users.js"
import { rotateMasterKey } from "./master-key/service.js"
import { createDashboardSessionCommand, createPlatformUserCommand, ROLES, type Role } from "./platform-users.js"
import { rotateSigningKey } from "./signing-keys.js"

/** Parsed flags: `--name value` / `--name=value`, and the switches `--json`, `--help`. */
export interface Args {
  readonly values: ReadonlyMap<string, string>
  readonly json: boolean
  readonly help: boolean
  /** What the command's own `parse` made of its flags (checked before the database is touched). */
  readonly parsed?: unknown
}

export interface Outcome {
  /** The one JSON object printed with --json. */
  readonly json: Record<string, unknown>
  /** Extra line for people (the JSON is printed as `key  value` lines otherwise). */
  readonly note?: string
  /** Non-zero when the command did its work but the job is not finished (run it again). */
  readonly exitCode?: number
}

export interface Command {
  readonly name: string
  readonly synopsis: string
  readonly description: string
  /** Flags that take a value. */
  readonly valueFlags: ReadonlyArray<string>
  readonly run: (args: Args, config: AppConfig) => Effect.Effect<Outcome, unknown, any>
  /** A command with flags of its own shape parses them itself (throws ConfigInvalid). */
  readonly parse?: (flags: ReadonlyArray<string>) => unknown
  /** Prints its JSON object whether or not --json is given. */
  readonly alwaysJson?: boolean
}

const required = (args: Args, name: string) => {
  const value = args.values.get(name)
  if (value === undefined || value === "") throw new ConfigInvalid({ message: `--${name} is required` })
  return value
}

const seconds = (args: Args, name: string, fallback: number) => {
  const raw = args.values.get(name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigInvalid({ message: `--${name} must be a whole number of seconds (got "${raw}")` })
  return Number(raw)
}

const positive = (args: Args, name: string, fallback: number) => {
  const value = seconds(args, name, fallback)
  if (value < 1) throw new ConfigInvalid({ message: `--${name} must be at least 1` })
  return value
}

/**
 * How long `master-key rotate` waits for every live process to acknowledge the switch: a process
 * switches at its next heartbeat and acknowledges at the one after (5 s apart), so a healthy
 * service answers within about 10 s; the rest is room for a slow database.
 */
const DEFAULT_ACK_TIMEOUT_SECONDS = 60

/** The publish-ahead default: verifiers re-read the JWKS within an hour (it is served with max-age=60). */
const DEFAULT_PUBLISH_AHEAD_SECONDS = 3600

export const COMMANDS: ReadonlyArray<Command> = [
  {
    name: "bootstrap",
    synopsis: "bootstrap [--json]",
    description: "Creates a Workspace, a Project, a test Environment and an API key with every scope; prints them (the key only now).",
    valueFlags: [],
    run: () => Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const result = yield* sql.withTransaction(bootstrap)
      return { json: { ...result }, note: "The API key is shown only now: store it." }
    }),
  },
  {
    name: "master-key rotate",
    synopsis: "master-key rotate [--batch-size <n>] [--ack-timeout <seconds>] [--json]",
    description: "With MASTER_KEY=<new> and MASTER_KEY_PREVIOUS=<old>, once every live process holds both: switches the service to sealing under the new key, waits (--ack-timeout, default 60 s) until every live process has acknowledged the switch, then re-seals every value sealed under the old key (in batches, resumable, safe while the service runs). Refused (exit code 1, nothing re-sealed) while a live server or worker runs without both keys, or when one has not acknowledged in time (run it again). When it reports completed, MASTER_KEY_PREVIOUS may be dropped after old_key_needed_until. Exit code 2: not finished, run it again. See docs/master-key-rotation.md.",
    valueFlags: ["batch-size", "ack-timeout"],
    run: (args) => Effect.gen(function* () {
      const report = yield* rotateMasterKey({
        batchSize: positive(args, "batch-size", 500),
        acknowledgementTimeoutMs: positive(args, "ack-timeout", DEFAULT_ACK_TIMEOUT_SECONDS) * 1000,
      })
      return report.completed
        ? { json: { ...report }, note: `Completed: restart every process without MASTER_KEY_PREVIOUS after ${report.old_key_needed_until} (step 4).` }
        : { json: { ...report }, note: "Not finished (values changed while it ran): run it again.", exitCode: 2 }
    }),
  },
  {
    name: "signing-keys rotate",
    synopsis: "signing-keys rotate --environment <env_id> [--publish-ahead <seconds>] [--json]",
    description: "Rotates an Environment's signing key in two runs: the first publishes the next key in the JWKS (action staged); a run once it has been published for --publish-ahead seconds (default 3600) makes it the signing key and retires the old one, which stays published until its tokens expire (action rotated). In between: action waiting.",
    valueFlags: ["environment", "publish-ahead"],
    run: (args) => Effect.gen(function* () {
      const result = yield* rotateSigningKey(required(args, "environment"), seconds(args, "publish-ahead", DEFAULT_PUBLISH_AHEAD_SECONDS) * 1000)
      return { json: { ...result } }
    }),
  },
  {
    name: "purge-deleted-users",
    synopsis: "purge-deleted-users [--environment-id <env_...>] [--older-than <N>d|h|m] [--dry-run]",
    description: purgeUsage.split("\n").slice(2).join("\n"),
    valueFlags: [],
    parse: parsePurgeArgs,
    alwaysJson: true,
    run: (args) => Effect.map(runPurge(args.parsed as PurgeArgs), (report) => ({ json: report })),
  },
  {
    name: "platform-user create",
    synopsis: "platform-user create --email <email> [--workspace <wsp_id> [--role owner|admin|member]] [--json]",
    description: "Creates a platform (dashboard) user, optionally a member of a Workspace (role default owner).",
    valueFlags: ["email", "workspace", "role"],
    run: (args) => Effect.gen(function* () {
      const role = args.values.get("role") ?? "owner"
      if (!ROLES.includes(role as Role)) throw new ConfigInvalid({ message: `--role must be one of ${ROLES.join(", ")} (got "${role}")` })
      if (args.values.has("role") && !args.values.has("workspace")) throw new ConfigInvalid({ message: "--role needs --workspace" })
      const result = yield* createPlatformUserCommand({ email: required(args, "email"), workspaceId: args.values.get("workspace"), role: role as Role })
      return { json: result }
    }),
  },
  {
    name: "dashboard-session create",
    synopsis: "dashboard-session create --email <email> [--json]",
    description: "Signs a platform user in: prints a 12-hour Dashboard session, to send as the dashboard_session cookie (writes only from DASHBOARD_ORIGINS) or as Authorization: Bearer.",
    valueFlags: ["email"],
    run: (args, config) => Effect.gen(function* () {
      const result = yield* createDashboardSessionCommand(config, required(args, "email"))
      return { json: result, note: "The session is shown only now." }
    }),
  },
]

export const usage = () => ["usage: npm run cli -- <command> [flags]   (each command takes --help)", "", "commands:",
  ...COMMANDS.map((c) => `  ${c.synopsis}`)].join("\n")

/** Finds the command named by the first one or two words and parses its flags. */
export const parseCommandLine = (argv: ReadonlyArray<string>): { command: Command; args: Args } | undefined => {
  const command = COMMANDS.find((c) => {
    const words = c.name.split(" ")
    return words.every((w, i) => argv[i] === w)
  })
  if (!command) return undefined
  const rest = argv.slice(command.name.split(" ").length)
  if (command.parse) {
    const help = rest.includes("--help") || rest.includes("-h")
    const flags = rest.filter((a) => a !== "--json")
    return { command, args: { values: new Map(), json: rest.includes("--json"), help, parsed: help ? undefined : command.parse(flags) } }
  }
  const values = new Map<string, string>()
  let json = false
  let help = false
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!
    if (arg === "--json") json = true
    else if (arg === "--help" || arg === "-h") help = true
    else {
      const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
      if (!m || !command.valueFlags.includes(m[1]!)) throw new ConfigInvalid({ message: `unknown argument "${arg}"; usage: npm run cli -- ${command.synopsis}` })
      const value = m[2] ?? rest[++i]
      if (value === undefined) throw new ConfigInvalid({ message: `--${m[1]} needs a value` })
      values.set(m[1]!, value)
    }
  }
  return { command, args: { values, json, help } }
}
