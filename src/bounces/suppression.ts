import { Effect } from "effect"
import { Crypto } from "../platform/crypto.js"
import { recipientHash } from "./recipient.js"
import * as repo from "./repo.js"

/**
 * Whether Email OTP must not mail this address: the user's flag (`users.email_suppressed`) or a
 * hard bounce of the address in this Environment, registered or not (decisions, "Bounces").
 * The caller still answers identically and enqueues the no-op mail job.
 */
export const isAddressSuppressed = (input: {
  readonly workspaceId: string; readonly environmentId: string; readonly address: string; readonly userFlag: boolean | undefined
}) => input.userFlag === true
  ? Effect.succeed(true)
  : Effect.gen(function* () {
    const crypto = yield* Crypto
    return yield* repo.isSuppressed(input.environmentId, recipientHash(crypto, input.workspaceId, input.address))
  })
