import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { environmentForCaller } from "../auth/access.js"
import { CurrentCaller } from "../auth/caller.js"
import { UserDataJobNotFound } from "./errors.js"

/**
 * The job of the path, if the caller may reach it: same Workspace (the lookup is keyed by
 * it), and for an Environment-pinned key the same Environment; its Environment must not be
 * deleted. Anything else is 404 `job_not_found`, as if it did not exist.
 */
export const reachableJob = Effect.fnUntraced(function* <Row extends { readonly environment_id: string }, E>(
  lookup: (workspaceId: string, id: string) => Effect.Effect<Row | undefined, E, SqlClient.SqlClient>,
  jobId: string,
) {
  const caller = yield* CurrentCaller
  const job = yield* lookup(caller.workspaceId, jobId).pipe(Effect.orDie)
  if (!job) return yield* new UserDataJobNotFound({ detail: "Job not found" })
  yield* environmentForCaller(job.environment_id).pipe(
    Effect.catchTag("NotFound", () => Effect.fail(new UserDataJobNotFound({ detail: "Job not found" }))),
  )
  return job
})
