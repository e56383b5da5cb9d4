import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { InvalidRequest } from "../../http/errors.js"
import { bodyText, json } from "../../http/route.js"
import { type AppConfig, Config } from "../../platform/config.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { Tenancy } from "../../tenancy/service.js"
import { environmentUrls } from "../../tenancy/urls.js"
import { environmentForCaller } from "../auth/access.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import {
  CreateEnvironmentBody,
  DisableLegacyBody,
  Environment,
  EnvironmentList,
  EnvironmentParams,
  ListEnvironmentsQuery,
  RpMigration,
  Settings,
  UpdateEnvironmentBody,
  UpdateSettingsBody,
} from "./schema.js"
import * as service from "./service.js"
import { Theme, ThemeInput, themeCss } from "./theme.js"

const present = (config: AppConfig, env: EnvironmentRecord) => {
  const urls = environmentUrls(config, env)
  return {
    id: env.id,
    workspace_id: env.workspaceId,
    project_id: env.projectId,
    type: env.type,
    name: env.name,
    status: env.status,
    issuer: urls.issuer,
    interaction_domain: urls.interactionDomain,
    rp_id: urls.rpId,
    created_at: env.createdAt.toISOString(),
    updated_at: env.updatedAt.toISOString(),
  }
}

const one = (env: EnvironmentRecord, status = 200) =>
  Effect.map(Config, (config) => withEtag(json(present(config, env), status), env.id, env.version))

const activeRpIdOf = (config: AppConfig) => (env: EnvironmentRecord) => environmentUrls(config, env).rpId

/** The derived fields are never accepted from a caller (spec: "never given on create"). */
const DERIVED = {
  issuer: "is derived and read-only",
  interaction_domain: "is derived and read-only",
  rp_id: "is derived and read-only",
}

/** `status: deleted` is reached only through DELETE (spec: Environment status). */
const refuseDeletedStatus = Effect.gen(function* () {
  const text = yield* bodyText
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return
  }
  if (typeof value === "object" && value !== null && (value as { status?: unknown }).status === "deleted") {
    return yield* new InvalidRequest({ detail: "status cannot be set to deleted by PATCH; use DELETE" })
  }
})

/** After the commit, this replica drops its cached copy (other replicas follow within 5 s). */
const forgetAfterCommit = (afterCommit: (f: () => void) => void, environmentId: string) =>
  Effect.map(Tenancy, (tenancy) => afterCommit(() => tenancy.forgetEnvironment(environmentId)))

const tags = ["Environments"]

export const environmentRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/environments",
      summary: "List the Environments of a Project",
      tags,
      scope: "environments:read",
      query: ListEnvironmentsQuery,
      response: EnvironmentList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const config = yield* Config
        const page = yield* parsePage(query)
        const rows = yield* service.listEnvironments({
          ...page,
          project_id: query.project_id,
          type: query.type,
          workspace_id: query.workspace_id,
        })
        return json(
          pageOf(
            rows,
            page,
            (r) => r.id,
            (r) => present(config, r),
          ),
        )
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/environments",
      summary: "Create an Environment (with its signing key); issuer, interaction_domain and rp_id are derived",
      tags,
      scope: "environments:write",
      readOnly: DERIVED,
      body: CreateEnvironmentBody,
      response: Environment,
      status: 201,
      idempotent: true,
    },
    ({ body }) => Effect.flatMap(service.createEnvironment(body), (env) => one(env, 201)),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/environments/:environmentId",
      summary: "Get an Environment",
      tags,
      scope: "environments:read",
      params: EnvironmentParams,
      response: Environment,
    },
    ({ params }) => Effect.flatMap(environmentForCaller(params.environmentId), (env) => one(env)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/environments/:environmentId",
      summary: "Update an Environment's name and/or status (active / suspended; If-Match supported)",
      tags,
      scope: "environments:write",
      params: EnvironmentParams,
      readOnly: DERIVED,
      refuseBody: refuseDeletedStatus,
      body: UpdateEnvironmentBody,
      response: Environment,
      idempotent: true,
      ifMatch: { resource: (p) => p.environmentId },
    },
    ({ params, body, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        yield* forgetAfterCommit(afterCommit, params.environmentId)
        return yield* one(yield* service.updateEnvironment(params.environmentId, body, expectedVersion))
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/environments/:environmentId",
      summary: "Delete an Environment (status becomes deleted; If-Match supported)",
      tags,
      scope: "environments:write",
      params: EnvironmentParams,
      response: Environment,
      idempotent: true,
      ifMatch: { resource: (p) => p.environmentId },
    },
    ({ params, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        yield* forgetAfterCommit(afterCommit, params.environmentId)
        return yield* one(yield* service.deleteEnvironment(params.environmentId, expectedVersion))
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/environments/:environmentId/settings",
      summary: "Get an Environment's settings",
      tags,
      scope: "environments:read",
      params: EnvironmentParams,
      response: Settings,
    },
    ({ params }) => Effect.map(service.getSettings(params.environmentId), (settings) => json(settings)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/environments/:environmentId/settings",
      summary: "Update an Environment's settings (no If-Match, no Idempotency-Key)",
      tags,
      scope: "environments:write",
      params: EnvironmentParams,
      body: UpdateSettingsBody,
      response: Settings,
      transaction: true,
    },
    ({ params, body, afterCommit }) =>
      Effect.gen(function* () {
        yield* forgetAfterCommit(afterCommit, params.environmentId)
        return json(yield* service.updateSettings(params.environmentId, body))
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/environments/:environmentId/theme",
      summary: "Get an Environment's Hosted Login theme",
      tags,
      scope: "environments:read",
      params: EnvironmentParams,
      response: Theme,
    },
    ({ params }) =>
      Effect.map(service.getTheme(params.environmentId), ({ theme, version }) =>
        json(theme, 200, { etag: service.themeEtag(params.environmentId, version) }),
      ),
  ),

  endpoint(
    {
      method: "PUT",
      path: "/v1/environments/:environmentId/theme",
      summary:
        "Replace an Environment's theme (If-Match required; omitted fields take their defaults; no Idempotency-Key)",
      tags,
      scope: "environments:write",
      params: EnvironmentParams,
      body: ThemeInput,
      response: Theme,
      transaction: true,
      ifMatch: {
        resource: (p) => service.themeTag(p.environmentId),
        required: { detail: "Send If-Match with the theme's ETag (GET the theme first)" },
      },
    },
    ({ params, body, expectedVersion, afterCommit }) =>
      Effect.gen(function* () {
        yield* forgetAfterCommit(afterCommit, params.environmentId)
        const { theme, version } = yield* service.replaceTheme(params.environmentId, body, expectedVersion)
        return json(theme, 200, { etag: service.themeEtag(params.environmentId, version) })
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/environments/:environmentId/theme/preview-css",
      summary: "Preview the theme as the CSS the Hosted Login pages use (text/css)",
      tags,
      scope: "environments:read",
      params: EnvironmentParams,
      response: Schema.String,
    },
    ({ params }) =>
      Effect.map(service.getTheme(params.environmentId), ({ theme }) =>
        HttpServerResponse.text(themeCss(theme), {
          contentType: "text/css; charset=utf-8",
          headers: { "cache-control": "no-store" },
        }),
      ),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/environments/:environmentId/rp-migration",
      summary: "Get the WebAuthn RP ID migration state (active and legacy RP ID)",
      tags,
      scope: "environments:read",
      params: EnvironmentParams,
      response: RpMigration,
    },
    ({ params }) =>
      Effect.gen(function* () {
        return json(yield* service.getRpMigration(params.environmentId, activeRpIdOf(yield* Config)))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/environments/:environmentId/rp-migration/disable-legacy",
      summary: "Stop accepting the legacy RP ID (irreversible; confirm_rp_id must equal it)",
      tags,
      scope: "environments:write",
      params: EnvironmentParams,
      body: DisableLegacyBody,
      response: RpMigration,
      idempotent: true,
    },
    ({ params, body, afterCommit }) =>
      Effect.gen(function* () {
        const config = yield* Config
        yield* forgetAfterCommit(afterCommit, params.environmentId)
        return json(yield* service.disableLegacyRp(params.environmentId, body.confirm_rp_id, activeRpIdOf(config)))
      }),
  ),
]
