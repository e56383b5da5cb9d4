import { CliUsage } from "./cli-usage.js"
import { parsePurgeArgs, purgeUsage } from "./purge-args.js"
import { ROLES, type Role } from "./roles.js"

// The operator commands as the command line knows them: names, usage, flags and their checks.
// What each command does is in ./commands.ts, loaded only to run one: `--help` and wrong use
// are answered without loading the application (it takes seconds).

/** Parsed flags: `--name value` / `--name=value`, and the switches `--json`, `--help`. */
export interface Args {
  readonly values: ReadonlyMap<string, string>
  readonly json: boolean
  readonly help: boolean
  /** What the command's own `options` made of its flags (checked before the database is touched). */
  readonly parsed?: unknown
}

/** Every operator command (./commands.ts has what each does, by this name). */
export type CommandName =
  | "bootstrap"
  | "master-key rotate"
  | "signing-keys rotate"
  | "purge-deleted-users"
  | "platform-user create"
  | "dashboard-session create"

export interface CommandLine {
  readonly name: CommandName
  readonly synopsis: string
  readonly description: string
  /** A complete command line, after `npm run -s cli -- `, shown by --help. */
  readonly example: string
  /** Flags that take a value; `aliases` maps another spelling to its flag (kept for old scripts). */
  readonly valueFlags: ReadonlyArray<string>
  readonly aliases?: Readonly<Record<string, string>>
  /** Checks and converts the flags before the database is touched (throws CliUsage); the result is `args.parsed`. */
  readonly options?: (args: Args) => unknown
  /** A command with flags of its own shape parses them itself (throws CliUsage). */
  readonly parse?: (flags: ReadonlyArray<string>) => unknown
  /** Prints its JSON object whether or not --json is given. */
  readonly alwaysJson?: boolean
}

const required = (args: Args, name: string) => {
  const value = args.values.get(name)
  if (value === undefined || value === "") throw new CliUsage(`--${name} is required`)
  return value
}

const seconds = (args: Args, name: string, fallback: number) => {
  const raw = args.values.get(name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new CliUsage(`--${name} must be a whole number of seconds (got "${raw}")`)
  return Number(raw)
}

const positive = (args: Args, name: string, fallback: number) => {
  const value = seconds(args, name, fallback)
  if (value < 1) throw new CliUsage(`--${name} must be at least 1`)
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

/** What `master-key rotate` makes of its flags. */
export interface MasterKeyRotateOptions {
  readonly batchSize: number
  readonly acknowledgementTimeoutMs: number
}

/** What `signing-keys rotate` makes of its flags. */
export interface SigningKeysRotateOptions {
  readonly environmentId: string
  readonly publishAheadMs: number
}

/** What `platform-user create` makes of its flags. */
export interface PlatformUserCreateOptions {
  readonly email: string
  readonly workspaceId: string | undefined
  readonly role: Role
}

export const COMMAND_LINES: ReadonlyArray<CommandLine> = [
  {
    name: "bootstrap",
    synopsis: "bootstrap [--json]",
    description:
      "Creates a Workspace, a Project, a test Environment and an API key with every scope; prints them (the key only now). Give it the PORT, DATA_DIR and host settings of the running server: the URLs it prints are built from them.",
    example: "bootstrap --json > .data/bootstrap.json",
    valueFlags: [],
  },
  {
    name: "master-key rotate",
    synopsis: "master-key rotate [--batch-size <n>] [--ack-timeout <seconds>] [--json]",
    description:
      "With MASTER_KEY=<new> and MASTER_KEY_PREVIOUS=<old>, once every live process holds both: switches the service to sealing under the new key, waits (--ack-timeout, default 60 s) until every live process has acknowledged the switch, then re-seals every value sealed under the old key (in batches, resumable, safe while the service runs). Refused (exit code 1, nothing re-sealed) while a live server or worker runs without both keys, or when one has not acknowledged in time (run it again). When it reports completed, MASTER_KEY_PREVIOUS may be dropped after old_key_needed_until. Exit code 3: not finished, run it again. See docs/master-key-rotation.md.",
    example: "master-key rotate --json   (with MASTER_KEY=<new> MASTER_KEY_PREVIOUS=<old>)",
    valueFlags: ["batch-size", "ack-timeout"],
    options: (args): MasterKeyRotateOptions => ({
      batchSize: positive(args, "batch-size", 500),
      acknowledgementTimeoutMs: positive(args, "ack-timeout", DEFAULT_ACK_TIMEOUT_SECONDS) * 1000,
    }),
  },
  {
    name: "signing-keys rotate",
    synopsis: "signing-keys rotate --environment <env_id> [--publish-ahead <seconds>] [--json]",
    description:
      "Rotates an Environment's signing key in two runs: the first publishes the next key in the JWKS (action staged); a run once it has been published for --publish-ahead seconds (default 3600) makes it the signing key and retires the old one, which stays published until its tokens expire (action rotated). In between: action waiting.",
    example: "signing-keys rotate --environment env_abcdefghijklmnopqrstuvwxyz234567 --json",
    valueFlags: ["environment", "publish-ahead"],
    aliases: { "environment-id": "environment" },
    options: (args): SigningKeysRotateOptions => ({
      environmentId: required(args, "environment"),
      publishAheadMs: seconds(args, "publish-ahead", DEFAULT_PUBLISH_AHEAD_SECONDS) * 1000,
    }),
  },
  {
    name: "purge-deleted-users",
    synopsis: "purge-deleted-users [--environment <env_...>] [--older-than <N>d|h|m] [--dry-run]",
    description: purgeUsage.split("\n").slice(2).join("\n"),
    example: "purge-deleted-users --environment env_abcdefghijklmnopqrstuvwxyz234567 --older-than 30d --dry-run",
    valueFlags: [],
    parse: parsePurgeArgs,
    alwaysJson: true,
  },
  {
    name: "platform-user create",
    synopsis: "platform-user create --email <email> [--workspace <wsp_id> [--role owner|admin|member]] [--json]",
    description: "Creates a platform (dashboard) user, optionally a member of a Workspace (role default owner).",
    example:
      "platform-user create --email you@example.com --workspace wsp_abcdefghijklmnopqrstuvwxyz234567 --role admin",
    valueFlags: ["email", "workspace", "role"],
    options: (args): PlatformUserCreateOptions => {
      const role = args.values.get("role") ?? "owner"
      if (!ROLES.includes(role as Role)) throw new CliUsage(`--role must be one of ${ROLES.join(", ")} (got "${role}")`)
      if (args.values.has("role") && !args.values.has("workspace")) throw new CliUsage("--role needs --workspace")
      return { email: required(args, "email"), workspaceId: args.values.get("workspace"), role: role as Role }
    },
  },
  {
    name: "dashboard-session create",
    synopsis: "dashboard-session create --email <email> [--json]",
    description:
      "Signs a platform user in: prints a 12-hour Dashboard session, to send as the dashboard_session cookie (writes only from DASHBOARD_ORIGINS) or as Authorization: Bearer.",
    example: "dashboard-session create --email you@example.com --json",
    valueFlags: ["email"],
    options: (args) => required(args, "email"),
  },
]

/** The login helper (src/cli/login.ts) is listed with the commands; it needs no database. */
export interface ListedCommand {
  readonly name: string
  readonly synopsis: string
}

export const usage = (extra: ReadonlyArray<ListedCommand> = []) =>
  [
    "usage: npm run cli -- <command> [flags]   (each command takes --help; --json prints one JSON object)",
    "",
    "commands:",
    ...[...COMMAND_LINES, ...extra].map((c) => `  ${c.synopsis}`),
    "",
    "example: npm run -s cli -- bootstrap --json > .data/bootstrap.json",
  ].join("\n")

/** What `<command> --help` prints: synopsis, description and an example. */
export const commandHelp = (command: { synopsis: string; description: string; example: string }) =>
  `usage: npm run cli -- ${command.synopsis}\n\n${command.description}\n\nexample:\n  npm run -s cli -- ${command.example}\n`

/** The command named by the first one or two words, if any. */
export const findCommand = (argv: ReadonlyArray<string>) =>
  COMMAND_LINES.find((c) => c.name.split(" ").every((w, i) => argv[i] === w))

const usagePointer = (command: CommandLine) =>
  `usage: npm run cli -- ${command.synopsis} (npm run cli -- ${command.name} --help for more)`

/** Runs a command's own flag checks; their reason is given with a pointer to the usage. */
const checked = (command: CommandLine, check: () => unknown) => {
  try {
    return check()
  } catch (e) {
    if (e instanceof CliUsage) throw new CliUsage(`${e.message.split("\n")[0]}; ${usagePointer(command)}`)
    throw e
  }
}

/** Finds the command named by the first one or two words and parses its flags (throws CliUsage). */
export const parseCommandLine = (argv: ReadonlyArray<string>): { command: CommandLine; args: Args } | undefined => {
  const command = findCommand(argv)
  if (!command) return undefined
  const rest = argv.slice(command.name.split(" ").length)
  const help = rest.includes("--help") || rest.includes("-h")
  if (command.parse) {
    const flags = rest.filter((a) => a !== "--json")
    return {
      command,
      args: {
        values: new Map(),
        json: rest.includes("--json"),
        help,
        parsed: help ? undefined : checked(command, () => command.parse!(flags)),
      },
    }
  }
  const values = new Map<string, string>()
  let json = false
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!
    if (arg === "--json") json = true
    else if (arg === "--help" || arg === "-h") continue
    else {
      const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
      const name = m ? (command.aliases?.[m[1]!] ?? m[1]!) : undefined
      if (!m || name === undefined || !command.valueFlags.includes(name))
        throw new CliUsage(`unknown argument "${arg}"; ${usagePointer(command)}`)
      const value = m[2] ?? rest[++i]
      if (value === undefined) throw new CliUsage(`--${m[1]} needs a value; ${usagePointer(command)}`)
      values.set(name, value)
    }
  }
  const args: Args = { values, json, help }
  if (help || !command.options) return { command, args }
  return { command, args: { ...args, parsed: checked(command, () => command.options!(args)) } }
}
