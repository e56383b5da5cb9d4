import { CliUsage } from "./operator/cli-usage.js"
import { commandHelp, COMMAND_LINES, findCommand, parseCommandLine, usage } from "./operator/command-line.js"
import { describeUnknown, explainConnectionFailure } from "./platform/start-failure.js"
import { LOGIN_COMMAND, parseLoginFlags } from "./cli/login-command.js"

/**
 * Operator commands (`npm run cli -- <command>`): their usage and flags in
 * src/operator/command-line.ts, what they do in src/operator/commands.ts. The application (and
 * the OIDC client of `login`) is loaded only to run a command: usage, `--help` and wrong use
 * answer at once.
 * Exit codes: 0 done, 1 refused or failed (one line why), 2 wrong use (one line why, then usage
 * where it helps), 3 `master-key rotate` not finished.
 */
const entry = async (): Promise<number> => {
  const argv = process.argv.slice(2)
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || (argv[0] === "help" && argv.length === 1)) {
    process.stdout.write(`${usage([LOGIN_COMMAND])}\n`)
    return 0
  }
  // `help <command>` is `<command> --help`.
  if (argv[0] === "help") return main([...argv.slice(1), "--help"])
  return main(argv)
}

const unknownCommand = (argv: ReadonlyArray<string>) =>
  new CliUsage(
    `unknown command "${
      argv
        .filter((a) => !a.startsWith("-"))
        .slice(0, 2)
        .join(" ") || argv[0]
    }"; the commands are: ${[...COMMAND_LINES, LOGIN_COMMAND].map((c) => c.name).join(", ")}\n${usage([LOGIN_COMMAND])}`,
  )

const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  if (argv[0] === "login") {
    if (argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(commandHelp(LOGIN_COMMAND))
      return 0
    }
    // An OIDC client of a running server: no database, no configuration of its own.
    const flags = parseLoginFlags(argv.slice(1))
    const { login } = await import("./cli/login.js")
    const tokens = await login({
      ...flags,
      timeoutMs: 5 * 60_000,
      announce: (url) =>
        process.stderr.write(`Open this URL in a browser to sign in (waiting up to 5 minutes):\n\n  ${url}\n\n`),
    })
    process.stdout.write(JSON.stringify(tokens, null, 2) + "\n")
    return 0
  }
  if (!findCommand(argv)) throw unknownCommand(argv)
  const parsed = parseCommandLine(argv)
  if (!parsed) throw unknownCommand(argv)
  const { command, args } = parsed
  if (args.help) {
    process.stdout.write(commandHelp(command))
    return 0
  }
  const { runCommand } = await import("./cli/run-command.js")
  return runCommand(command, args)
}

entry().then(
  (code) => process.exit(code),
  (e: unknown) => {
    if (e instanceof CliUsage) {
      process.stderr.write(`authservice cli: ${e.message}\n`)
      process.exit(2)
    }
    // A database it cannot use says why (refused, password, no such database) and what to change.
    const databaseUrl = process.env["DATABASE_URL"] || undefined
    const line = explainConnectionFailure(e, { databaseUrl, port: 0 }) ?? describeUnknown(e)
    process.stderr.write(`authservice cli: ${line}\n`)
    process.exit(1)
  },
)
