import { Effect } from "effect"
import { Audit } from "../../platform/audit.js"
import { Crypto, constantTimeEqual, sha256Hex } from "../../platform/crypto.js"
import { InvalidSocialProof } from "./errors.js"
import * as repo from "./repo.js"

// The completion proof of a custom-UI social login (docs/decisions/social-login.md, Social login: "Custom UI:
// the completion proof"). A transaction made by `POST /auth/transactions` has no browser binding:
// whoever created it can poll it, so without a proof an attacker could send the provider's
// authorization URL of its own transaction to a victim signed in at the provider, and complete
// the transaction the victim's browser authenticated. The callback hands a one-time 256-bit
// proof to the browser that came back (at the client's registered redirect URI); the transaction
// keeps only its SHA-256; `complete` and passkey registration must present it. Hosted Login
// transactions (`/oauth2/authorize`) are bound by their cookie instead (src/social/bound-browser.ts).

/** Whether using this authenticated transaction needs the social login's completion proof. */
export const needsSocialProof = (row: repo.TransactionRow) => row.method === "social" && row.source !== "authorize"

/**
 * Issues the proof for a custom-UI transaction whose social callback ended `authenticated` or
 * `link_required` (in the caller's SQL transaction); undefined for Hosted Login transactions.
 */
export const issueSocialProof = Effect.fnUntraced(function* (row: repo.TransactionRow) {
  if (row.source === "authorize") return undefined
  const crypto = yield* Crypto
  const proof = yield* crypto.randomToken(32)
  yield* repo.setSocialProofHash(row.environment_id, row.id, sha256Hex(proof)).pipe(Effect.orDie)
  return proof
})

/** Whether `presented` is this transaction's (unused) proof; compared in constant time. */
export const socialProofMatches = (row: repo.TransactionRow, presented: string | undefined) =>
  presented !== undefined &&
  row.social_proof_hash !== null &&
  constantTimeEqual(sha256Hex(presented), row.social_proof_hash)

/**
 * Refuses (400 `invalid_social_proof`, nothing changes) a use of a social custom-UI transaction
 * without its proof. The refusal is audited (`login.social_proof_refused`): it is the trace of a
 * forwarded authorization URL.
 */
export const requireSocialProof = Effect.fnUntraced(function* (
  row: repo.TransactionRow,
  presented: string | undefined,
  use: "complete" | "passkey_registration",
) {
  if (!needsSocialProof(row) || socialProofMatches(row, presented)) return
  const audit = yield* Audit
  yield* audit.append({
    workspaceId: row.workspace_id,
    environmentId: row.environment_id,
    actor: { type: "end_user" },
    action: "login.social_proof_refused",
    subjectType: "auth_transaction",
    subjectId: row.id,
    result: "failure",
    details: { use, reason: presented === undefined ? "missing" : "mismatch", client_id: row.client_id },
  })
  return yield* new InvalidSocialProof({
    detail:
      presented === undefined
        ? "This social login must be completed with the social_proof the provider's return delivered to the redirect URI"
        : "social_proof is not this transaction's",
  })
})
