import { Effect } from "effect"
import { recipientHashes } from "./recipient.js"
import * as repo from "./repo.js"

/**
 * Whether Email OTP must not mail this address: the user's flag (`users.email_suppressed`) or a
 * hard bounce of the address in this Environment, registered or not (decisions, "Bounces").
 * The caller still answers identically and enqueues the no-op mail job.
 */
export const isAddressSuppressed = (input: {
  readonly workspaceId: string
  readonly environmentId: string
  readonly address: string
  readonly userFlag: boolean | undefined
}) =>
  input.userFlag === true
    ? Effect.succeed(true)
    : Effect.flatMap(recipientHashes(input.workspaceId, input.address), (hashes) =>
        repo.isSuppressed(input.environmentId, hashes.all),
      )
