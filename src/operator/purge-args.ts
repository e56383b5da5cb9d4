import { CliUsage } from "./cli-usage.js"

// The flags of `purge-deleted-users`, apart from the purge: `--help` and wrong use are answered
// without loading the application (src/cli.ts).

export const purgeUsage = `usage: npm run cli -- purge-deleted-users [--environment <env_...>] [--older-than <N>d|h|m] [--dry-run]

Purges, now, users pending deletion (DELETE /v1/users/{id}, DELETE /me): their personal data,
identities, passkeys, sessions, refresh tokens and challenges are deleted; audit records are kept,
their personal parts redacted. Without --older-than every user pending deletion is purged,
whatever USER_DELETION_RETENTION_DAYS says (the worker applies that period by itself, hourly).
Prints one JSON object: {purged, user_ids, audit_records_redacted, failed_user_ids, cutoff,
environment_id, dry_run}; a user in failed_user_ids could not be purged (the log says why) and
stays pending deletion; the others were purged all the same.

  --environment <id>      only users of this Environment (--environment-id is the same flag)
  --older-than <N>d|h|m   only users pending deletion for at least this long (e.g. 30d)
  --dry-run               list who would be purged; change nothing`

export interface PurgeArgs {
  readonly environmentId: string | undefined
  readonly olderThanMs: number
  readonly dryRun: boolean
}

const ENVIRONMENT_ID = /^env_[a-z2-7]{32}$/
const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000 }

/** Parses the command's flags (`--flag value` or `--flag=value`); throws CliUsage with the usage. */
export const parsePurgeArgs = (flags: ReadonlyArray<string>): PurgeArgs => {
  let environmentId: string | undefined
  let olderThanMs = 0
  let dryRun = false
  const bad = (why: string) => new CliUsage(`${why}\n${purgeUsage}`)
  for (let i = 0; i < flags.length; i++) {
    const [name, inline] = flags[i]!.split(/=(.*)/s, 2) as [string, string | undefined]
    const value = () => {
      const v = inline ?? flags[++i]
      if (v === undefined || v === "") throw bad(`${name} needs a value`)
      return v
    }
    // --environment as in every command; --environment-id, its first spelling, stays an alias.
    if (name === "--environment" || name === "--environment-id") {
      environmentId = value()
      if (!ENVIRONMENT_ID.test(environmentId)) throw bad(`${name} must be an Environment id (env_ + 32 characters)`)
    } else if (name === "--older-than") {
      const m = /^(\d+)([dhm])$/.exec(value())
      if (!m) throw bad("--older-than must be a whole number followed by d, h or m (e.g. 30d)")
      olderThanMs = Number(m[1]) * UNIT_MS[m[2]!]!
    } else if (name === "--dry-run" && inline === undefined) dryRun = true
    else throw bad(`unknown option ${name}`)
  }
  return { environmentId, olderThanMs, dryRun }
}
