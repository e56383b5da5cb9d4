import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { decodeJsonBody, json, route } from "../../http/route.js"
import { Config } from "../../platform/config.js"
import { checkWebhookUrl } from "../../platform/outbound/url-policy.js"
import { environmentForCaller } from "../auth/access.js"
import { requireWorkspaceMatch, withCaller } from "../auth/service.js"
import { endpoint } from "../conventions/endpoint.js"
import { withIdempotency } from "../conventions/idempotency.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import { InvalidSourceUrl } from "./errors.js"
import { downloadExport, getExportJob, runExport } from "./export-service.js"
import { getImportJob, importErrors, prepareSource, runImport } from "./import-service.js"
import type { ExportJobRow, ImportErrorRow, ImportJobRow } from "./repo.js"
import {
  CreateExportJobBody,
  CreateImportJobBody,
  ExportArtifact,
  ExportJob,
  ImportErrorsQuery,
  ImportJob,
  ImportRowErrorList,
  JobParams,
} from "./schema.js"

// Management API, "Import / export jobs". Decode, call the service, encode.

const iso = (d: Date | null) => (d === null ? null : d.toISOString())

const presentImport = (job: ImportJobRow): typeof ImportJob.Type => ({
  id: job.id,
  environment_id: job.environment_id,
  format: job.format,
  source_url: job.source_url,
  status: job.status,
  total_rows: job.total_rows,
  imported_count: job.imported_count,
  skipped_count: job.skipped_count,
  failed_count: job.failed_count,
  error_count: job.skipped_count + job.failed_count,
  error: job.failure_code === null ? null : { code: job.failure_code, message: job.failure_message ?? "" },
  created_at: job.created_at.toISOString(),
  started_at: iso(job.started_at),
  completed_at: iso(job.completed_at),
})

const presentError = (e: ImportErrorRow) => ({
  row: e.row_number,
  line: e.line_number,
  code: e.code,
  field: e.field,
  message: e.message,
})

const presentExport = (job: ExportJobRow) =>
  Config.useSync((config): typeof ExportJob.Type => ({
    id: job.id,
    environment_id: job.environment_id,
    target_user_id: job.target_user_id,
    status: job.status,
    download_url:
      job.status === "completed"
        ? `${config.publicScheme}://${config.managementHost}/v1/user-export-jobs/${job.id}/download`
        : null,
    download_expires_at: iso(job.download_expires_at),
    size_bytes: job.artifact_bytes,
    error: job.failure_code === null ? null : { code: job.failure_code, message: job.failure_message ?? "" },
    created_at: job.created_at.toISOString(),
    completed_at: iso(job.completed_at),
  }))

const tags = ["User import / export jobs"]

export const userDataJobRoutes = [
  // Declared without `endpoint`: the source is fetched in the request but before the
  // idempotency record's transaction (no connection is held while a remote server answers).
  route(
    "POST",
    "/v1/user-import-jobs",
    withCaller(
      "user_data_jobs:write",
      Effect.gen(function* () {
        const body = yield* decodeJsonBody(CreateImportJobBody)
        yield* requireWorkspaceMatch(body.workspace_id)
        const env = yield* environmentForCaller(body.environment_id)
        const config = yield* Config
        const allowPrivateTargets = config.webhookAllowPrivateTargets
        const verdict = checkWebhookUrl(body.source_url, { allowPrivateTargets })
        if (!verdict.ok) return yield* new InvalidSourceUrl({ detail: verdict.detail.replace(/^url\b/, "source_url") })
        // The fetch runs in the request but outside any SQL transaction (no connection is held
        // while a remote server answers); a small source is then imported in the route's one
        // transaction, a large CSV is handed to the worker (import-service.ts).
        const startedAt = new Date(yield* Clock.currentTimeMillis)
        const prepared = yield* prepareSource(body.format, body.source_url, allowPrivateTargets)
        return yield* withIdempotency(
          Effect.gen(function* () {
            const job = yield* runImport({ env, format: body.format, sourceUrl: body.source_url, prepared, startedAt })
            return json(presentImport(job), 201, { location: `/v1/user-import-jobs/${job.id}` })
          }),
        )
      }),
    ),
    {
      summary:
        "Import users from an HTTPS JSON or CSV file: a small file is imported during the request (completed or failed on return); a large CSV is streamed by the worker (processing on return, counters move while it runs)",
      tags,
      scope: "user_data_jobs:write",
      body: CreateImportJobBody,
      response: ImportJob,
      status: 201,
      idempotent: true,
    },
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/user-import-jobs/:jobId",
      summary: "Get an import job: status and row counts",
      tags,
      scope: "user_data_jobs:read",
      params: JobParams,
      response: ImportJob,
    },
    ({ params }) => Effect.map(getImportJob(params.jobId), (job) => json(presentImport(job))),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/user-import-jobs/:jobId/errors",
      summary: "List an import job's row errors (row, code, field, message), by row number",
      tags,
      scope: "user_data_jobs:read",
      params: JobParams,
      query: ImportErrorsQuery,
      response: ImportRowErrorList,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const rows = yield* importErrors(params.jobId, page)
        return json(pageOf(rows, page, (r) => String(r.row_number), presentError))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/user-export-jobs",
      summary:
        "Export one user's data (profile, identities, passkey summaries, sessions; never secrets), built during the request",
      tags,
      scope: "user_data_jobs:write",
      body: CreateExportJobBody,
      response: ExportJob,
      status: 201,
      idempotent: true,
    },
    ({ body }) =>
      Effect.gen(function* () {
        yield* requireWorkspaceMatch(body.workspace_id)
        const env = yield* environmentForCaller(body.environment_id)
        const job = yield* runExport(env, body.target_user_id)
        return json(yield* presentExport(job), 201, { location: `/v1/user-export-jobs/${job.id}` })
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/user-export-jobs/:jobId",
      summary: "Get an export job: status and its expiring download_url",
      tags,
      scope: "user_data_jobs:read",
      params: JobParams,
      response: ExportJob,
    },
    ({ params }) =>
      Effect.flatMap(getExportJob(params.jobId), (job) => Effect.map(presentExport(job), (body) => json(body))),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/user-export-jobs/:jobId/download",
      summary: "Download a completed export (15 minutes after completion; afterwards 410 export_expired)",
      tags,
      scope: "user_data_jobs:read",
      params: JobParams,
      response: ExportArtifact,
    },
    ({ params }) =>
      Effect.map(downloadExport(params.jobId), ({ job, artifact }) =>
        HttpServerResponse.stream(artifact, {
          status: 200,
          contentType: "application/json",
          contentLength: job.artifact_bytes ?? undefined,
          headers: {
            "cache-control": "no-store",
            "content-disposition": `attachment; filename="user-export-${job.id}.json"`,
          },
        }),
      ),
  ),
]
