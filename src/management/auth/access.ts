import { Effect } from "effect"
import { NotFound } from "../../http/errors.js"
import { environmentById } from "../../tenancy/repo.js"
import { CurrentCaller } from "./caller.js"

/**
 * The Environment a Management request addresses, if the caller may reach it: it must
 * belong to the caller's Workspace, and an Environment-pinned key reaches only its own.
 * Anything else is 404, exactly as if it did not exist (no cross-tenant probing).
 */
export const environmentForCaller = (environmentId: string, options: { readonly allowDeleted?: boolean } = {}) =>
  Effect.gen(function* () {
    const caller = yield* CurrentCaller
    const env = yield* environmentById(environmentId).pipe(Effect.orDie)
    if (
      !env ||
      env.workspaceId !== caller.workspaceId ||
      (caller.environmentId !== null && caller.environmentId !== env.id) ||
      (env.status === "deleted" && !options.allowDeleted)
    ) {
      return yield* new NotFound({ detail: "Environment not found" })
    }
    return env
  })
