import { Effect } from "effect"
import { limitWrite, type WriteLimitName } from "../../rate-limit/write-limits.js"
import { readClientRow } from "../access-token/live-cache.js"

/** Requests that name no client of this Environment share one budget per address. */
const NO_CLIENT = "-"

/**
 * Counts an OAuth endpoint request per client and address (docs/decisions/rate-limits-and-caches.md, "Write limits:
 * every cheap-to-send write is counted per address"): thousands of one SPA's users behind one
 * corporate address refresh every few minutes, so the budget of an address is per client.
 * Only a client of this Environment gets a budget of its own (read through the live-state
 * cache): made-up client ids all share NO_CLIENT's, so inventing ids buys nothing.
 */
export const limitOAuthRequest = (
  name: Extract<WriteLimitName, "token" | "revoke" | "introspect">,
  environmentId: string,
  clientId: string | undefined,
) =>
  Effect.gen(function* () {
    const client = clientId === undefined ? undefined : yield* readClientRow(environmentId, clientId)
    yield* limitWrite(name, client === undefined ? NO_CLIENT : client.id)
  })
