import type { SealContext } from "../../platform/crypto.js"
import { sealContext as providerSecretContext } from "../../management/connections/secret.js"
import { sealContext as idempotentResponseContext } from "../../management/conventions/idempotency.js"
import { artifactSealContext, chunkSealContext } from "../../management/user-data-jobs/export-service.js"
import { sourceSealContext as importSourceContext } from "../../management/user-data-jobs/import-service.js"
import { SEND_LOGIN_CODE_TASK, sealContext as loginCodeMailContext } from "../../login/email-otp/mail-job.js"
import {
  SEND_EMAIL_CHANGE_NOTICE_TASK,
  sealContext as emailChangeNoticeContext,
} from "../../me/email-change/notice-job.js"
import { graceSealContext } from "../../oidc/refresh/service.js"
import { sealContext as signingKeyContext } from "../../platform/keys/service.js"
import { dataKeySealContext } from "../../platform/hmac-data-keys.js"
import { secretSealContext as webhookSecretContext } from "../../webhooks/service.js"
import { callbackSealContext as socialCallbackContext } from "../../social/bound-browser.js"
import { linkResultSealContext as socialLinkResultContext } from "../../social/link.js"
import { verifierSealContext as socialVerifierContext } from "../../social/redirect.js"

/**
 * Every place a value sealed under the master key lives (AES-256-GCM, `v1.<key-id>....`),
 * with what the re-sealing needs: a stable row order (`row`, a text SQL expression used as
 * the resumable cursor and the compare-and-set key), the sealed value, and the columns the
 * seal's associated data is built from. A new sealed column (`*_sealed` or `sealed`) or job
 * payload MUST be added here: the rotation refuses to run while the database has one that is
 * not (see ./repo.ts), and test/operator/sealed-values-coverage.test.ts fails for a
 * `crypto.seal` call whose purpose and table no entry here covers.
 *
 * Identifiers here are constants of ours, never input: they are spliced into SQL text.
 */
export interface SealedValues {
  /** The progress key and the column the coverage check expects: `<table>.<column>`. */
  readonly name: string
  /** FROM clause (a table, or a join). */
  readonly from: string
  /** Extra WHERE condition (beyond "sealed under another key"). */
  readonly where?: string
  readonly row: string
  /** How an UPDATE finds the row of a cursor value `$1` (default `<row> = $1`; an indexed form where `row` is an expression). */
  readonly rowMatch?: string
  readonly sealed: string
  /** Named SQL expressions handed to `context`. */
  readonly fields: Readonly<Record<string, string>>
  readonly context: (fields: Readonly<Record<string, string>>) => SealContext
  /** UPDATE ... SET <assignment> WHERE <row> = $row AND <sealed> = $from; `$to` is the new value. */
  readonly table: string
  readonly assignment: string
  /** Extra condition of the compare-and-set (a job a worker holds is left for the next pass). */
  readonly updatableWhen?: string
  /** For a job payload: the graphile-worker task. */
  readonly task?: string
}

/**
 * A sealed value in the `sealed` field of a graphile-worker job's payload; `fields` name
 * payload keys. A job a worker holds (locked) is left for the next pass.
 */
const jobPayload = (
  task: string,
  fields: Readonly<Record<string, string>>,
  context: SealedValues["context"],
): SealedValues => ({
  name: `graphile_worker.jobs.${task}`,
  task,
  from: "graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id",
  where: `t.identifier = '${task}'`,
  row: "lpad(j.id::text, 20, '0')",
  rowMatch: "j.id = $1::bigint",
  sealed: "(j.payload->>'sealed')",
  fields: Object.fromEntries(Object.entries(fields).map(([name, key]) => [name, `j.payload->>'${key}'`])),
  context,
  table: "graphile_worker._private_jobs j",
  assignment: "payload = (j.payload::jsonb || jsonb_build_object('sealed', $to::text))::json",
  updatableWhen: "j.locked_at is null",
})

const column = (
  table: string,
  sealedColumn: string,
  row: string,
  fields: Readonly<Record<string, string>>,
  context: SealedValues["context"],
): SealedValues => ({
  name: `${table}.${sealedColumn}`,
  from: table,
  row,
  sealed: sealedColumn,
  fields,
  context,
  table,
  assignment: `${sealedColumn} = $to`,
})

export const SEALED_VALUES: ReadonlyArray<SealedValues> = [
  column("signing_keys", "private_key_sealed", "kid", {}, (f) => signingKeyContext(f["row"]!)),
  // HMAC data keys: re-sealed, never changed, so the hashes they key survive the rotation.
  column("hmac_data_keys", "key_sealed", "purpose", {}, (f) => dataKeySealContext(f["row"]!)),
  column("webhooks", "secret_sealed", "id", {}, (f) => webhookSecretContext(f["row"]!)),
  column("connections", "provider_client_secret_sealed", "id", {}, (f) => providerSecretContext(f["row"]!)),
  column("user_export_jobs", "artifact_sealed", "id", {}, (f) => artifactSealContext(f["row"]!)),
  // Chunked export artifacts (sql/0152); the row key is export-service.ts chunkRowKey.
  column("user_export_chunks", "sealed", "(job_id || '/' || lpad(seq::text, 10, '0'))", {}, (f) =>
    chunkSealContext(f["row"]!),
  ),
  // The source URL of an import that is running (wiped when it ends).
  {
    ...column("user_import_jobs", "source_url_sealed", "id", {}, (f) => importSourceContext(f["row"]!)),
    where: "source_url_sealed is not null",
  },
  // Social login states live minutes; re-sealed like the rest so the old key can go at once.
  column("social_states", "code_verifier_sealed", "id", {}, (f) => socialVerifierContext(f["row"]!)),
  {
    ...column("social_states", "callback_sealed", "id", {}, (f) => socialCallbackContext(f["row"]!)),
    where: "callback_sealed is not null",
  },
  // A /me link's verified provider answer, waiting for the confirm (sql/0166).
  {
    ...column("social_states", "link_result_sealed", "id", {}, (f) => socialLinkResultContext(f["row"]!)),
    where: "link_result_sealed is not null",
  },
  column("refresh_families", "grace_response_sealed", "id", { generation: "grace_generation::text" }, (f) =>
    graceSealContext(f["row"]!, Number(f["generation"])),
  ),
  {
    ...column(
      "idempotency_keys",
      "response_sealed",
      "(workspace_id || '/' || caller || '/' || key)",
      { workspace: "workspace_id", caller: "caller", key: "key" },
      (f) => idempotentResponseContext(f["workspace"]!, f["caller"]!, f["key"]!),
    ),
    // Neither a Workspace id nor a caller (`api_key:<id>`, `platform_user:<id>`) contains '/'; the key may.
    rowMatch:
      "workspace_id = split_part($1, '/', 1) and caller = split_part($1, '/', 2)" +
      " and key = substr($1, length(split_part($1, '/', 1)) + length(split_part($1, '/', 2)) + 3)",
  },
  // The Email OTP mail job carries the code sealed in its graphile-worker payload (minutes long).
  jobPayload(SEND_LOGIN_CODE_TASK, { challenge: "challenge_id", generation: "generation" }, (f) =>
    loginCodeMailContext(f["challenge"]!, Number(f["generation"])),
  ),
  // The email-change notice job carries the old and new addresses sealed (retried for hours).
  jobPayload(SEND_EMAIL_CHANGE_NOTICE_TASK, { user: "user_id", version: "security_version" }, (f) =>
    emailChangeNoticeContext(f["user"]!, Number(f["version"])),
  ),
]

/** Names of graphile-worker tasks whose payloads carry a sealed value (`payload.sealed`). */
export const SEALED_JOB_TASKS = SEALED_VALUES.flatMap((v) => (v.task === undefined ? [] : [v.task]))
