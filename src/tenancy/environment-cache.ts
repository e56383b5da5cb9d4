import { Cache, Duration, Effect, Exit } from "effect"
import type { SqlClient } from "effect/sql"
import { ID_PATTERN } from "../platform/ids.js"
import { environmentChanged } from "../platform/environment-changes.js"
import * as repo from "./repo.js"
import type { EnvironmentRecord } from "./schema.js"

/**
 * This replica's caches of Environments by id (the `/e/{id}` path, the Interaction Domain
 * label) and of custom hostnames (the `Host` header). Both keys come from unauthenticated
 * requests, so both caches are bounded (docs/decisions/rate-limits-and-caches.md): least recently used entries are evicted
 * beyond `capacity`, and an unknown id or host is remembered only briefly, so a flood of
 * made-up names neither grows memory nor hides an Environment created a moment later.
 */
export interface EnvironmentCacheOptions {
  readonly capacity: number
  /** How long a found Environment is served before it is read again (other replicas' changes show within it). */
  readonly positiveTtl: Duration.Input
  /** How long "no such Environment / host" is remembered. */
  readonly negativeTtl: Duration.Input
}

export const ENVIRONMENT_CACHE: EnvironmentCacheOptions = {
  capacity: 10_000,
  positiveTtl: "5 seconds",
  negativeTtl: "1 second",
}

/** Only the shape of a real Environment id is looked up (and cached). */
const ENVIRONMENT_ID = ID_PATTERN("env")
/** A DNS name is at most 253 characters (RFC 1035 section 2.3.4); a longer Host is never a custom domain. */
const MAX_HOSTNAME = 253

const timeToLive = (options: EnvironmentCacheOptions) => (exit: Exit.Exit<unknown>) =>
  Exit.isSuccess(exit) ? (exit.value === undefined ? options.negativeTtl : options.positiveTtl) : Duration.zero

export const makeEnvironmentCache = (options: EnvironmentCacheOptions = ENVIRONMENT_CACHE) =>
  Effect.gen(function* () {
    const byId = yield* Cache.makeWith((id: string) => repo.environmentById(id).pipe(Effect.orDie), {
      capacity: options.capacity,
      timeToLive: timeToLive(options),
    })
    const idByHost = yield* Cache.makeWith(
      (hostname: string) => repo.environmentIdByCustomHost(hostname).pipe(Effect.orDie),
      { capacity: options.capacity, timeToLive: timeToLive(options) },
    )

    const environment = (id: string): Effect.Effect<EnvironmentRecord | undefined, never, SqlClient.SqlClient> =>
      ENVIRONMENT_ID.test(id) ? Cache.get(byId, id) : Effect.succeed(undefined)

    return {
      environment,
      environmentByCustomHost: (hostname: string) =>
        hostname.length > MAX_HOSTNAME
          ? Effect.succeed(undefined)
          : Effect.flatMap(Cache.get(idByHost, hostname), (id) =>
              id === undefined ? Effect.succeed(undefined) : environment(id),
            ),
      /** After a change on this replica: the Environment, and every host mapping (a domain may have moved). */
      forget: (id: string) => {
        Effect.runSync(Cache.invalidate(byId, id))
        Effect.runSync(Cache.invalidateAll(idByHost))
        environmentChanged(id)
      },
      /** Entries held now (tests; the bound under a flood). */
      sizes: Effect.all({ environments: Cache.size(byId), hosts: Cache.size(idByHost) }),
    }
  })
