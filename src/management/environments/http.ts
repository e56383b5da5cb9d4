import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { InvalidRequest } from "../../http/errors.js"
import { bodyText, decodeJsonBody, decodeParams, decodeQuery, json, refuseBodyFields, route } from "../../http/route.js"
import { type AppConfig, Config } from "../../platform/config.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { Tenancy } from "../../tenancy/service.js"
import { environmentUrls } from "../../tenancy/urls.js"
import { environmentForCaller } from "../auth/access.js"
import { withCaller } from "../auth/service.js"
import { withEtag } from "../http/etag.js"
import { pageOf, parsePage } from "../http/pagination.js"
import { withIdempotency } from "../http/idempotency.js"
import {
  CreateEnvironmentBody, DisableLegacyBody, Environment, EnvironmentList, EnvironmentParams, ListEnvironmentsQuery, RpMigration,
  Settings, UpdateEnvironmentBody, UpdateSettingsBody,
} from "./schema.js"
import * as service from "./service.js"
import { Theme, ThemeInput, themeCss } from "./theme.js"

const present = (config: AppConfig, env: EnvironmentRecord) => {
  const urls = environmentUrls(config, env)
  return {
    id: env.id, workspace_id: env.workspaceId, project_id: env.projectId, type: env.type, name: env.name, status: env.status,
    issuer: urls.issuer, interaction_domain: urls.interactionDomain, rp_id: urls.rpId,
    created_at: env.createdAt.toISOString(), updated_at: env.updatedAt.toISOString(),
  }
}

const one = (env: EnvironmentRecord, status = 200) => Effect.map(Config, (config) =>
  withEtag(json(present(config, env), status), env.id, env.version))

const activeRpIdOf = (config: AppConfig) => (env: EnvironmentRecord) => environmentUrls(config, env).rpId

/** The derived fields are never accepted from a caller (spec: "never given on create"). */
const DERIVED = { issuer: "is derived and read-only", interaction_domain: "is derived and read-only", rp_id: "is derived and read-only" }

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
const forgetAfter = <A, E, R>(environmentId: string, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Tenancy, (tenancy) => Effect.ensuring(effect, Effect.sync(() => tenancy.forgetEnvironment(environmentId))))

/** Writes without Idempotency-Key support (settings, theme) still run as one transaction. */
const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect)).pipe(Effect.catchTag("SqlError", Effect.die))

const tags = ["Environments"]

export const environmentRoutes = [
  route("GET", "/v1/environments", withCaller("environments:read", Effect.gen(function* () {
    const config = yield* Config
    const query = yield* decodeQuery(ListEnvironmentsQuery)
    const page = yield* parsePage(query)
    const rows = yield* service.listEnvironments({ ...page, project_id: query.project_id, type: query.type, workspace_id: query.workspace_id })
    return json(pageOf(rows, page, (r) => r.id, (r) => present(config, r)))
  })), {
    summary: "List the Environments of a Project", tags, scope: "environments:read", query: ListEnvironmentsQuery, response: EnvironmentList,
  }),

  route("POST", "/v1/environments", withCaller("environments:write", withIdempotency(Effect.gen(function* () {
    yield* refuseBodyFields(DERIVED)
    const body = yield* decodeJsonBody(CreateEnvironmentBody)
    return yield* one(yield* service.createEnvironment(body), 201)
  }))), {
    summary: "Create an Environment (with its signing key); issuer, interaction_domain and rp_id are derived", tags,
    scope: "environments:write", body: CreateEnvironmentBody, response: Environment, status: 201, idempotent: true,
  }),

  route("GET", "/v1/environments/:environmentId", withCaller("environments:read", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    return yield* one(yield* environmentForCaller(environmentId))
  })), { summary: "Get an Environment", tags, scope: "environments:read", params: EnvironmentParams, response: Environment }),

  route("PATCH", "/v1/environments/:environmentId", withCaller("environments:write", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    return yield* forgetAfter(environmentId, withIdempotency(Effect.gen(function* () {
      yield* refuseBodyFields(DERIVED)
      yield* refuseDeletedStatus
      const body = yield* decodeJsonBody(UpdateEnvironmentBody)
      return yield* one(yield* service.updateEnvironment(environmentId, body))
    })))
  })), {
    summary: "Update an Environment's name and/or status (active / suspended; If-Match supported)", tags, scope: "environments:write",
    params: EnvironmentParams, body: UpdateEnvironmentBody, response: Environment, idempotent: true,
  }),

  route("DELETE", "/v1/environments/:environmentId", withCaller("environments:write", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    return yield* forgetAfter(environmentId, withIdempotency(Effect.flatMap(service.deleteEnvironment(environmentId), (env) => one(env))))
  })), {
    summary: "Delete an Environment (status becomes deleted; If-Match supported)", tags, scope: "environments:write",
    params: EnvironmentParams, response: Environment, idempotent: true,
  }),

  route("GET", "/v1/environments/:environmentId/settings", withCaller("environments:read", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    return json(yield* service.getSettings(environmentId))
  })), { summary: "Get an Environment's settings", tags, scope: "environments:read", params: EnvironmentParams, response: Settings }),

  route("PATCH", "/v1/environments/:environmentId/settings", withCaller("environments:write", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    const body = yield* decodeJsonBody(UpdateSettingsBody)
    return json(yield* forgetAfter(environmentId, transaction(service.updateSettings(environmentId, body))))
  })), {
    summary: "Update an Environment's settings (no If-Match, no Idempotency-Key)", tags, scope: "environments:write",
    params: EnvironmentParams, body: UpdateSettingsBody, response: Settings,
  }),

  route("GET", "/v1/environments/:environmentId/theme", withCaller("environments:read", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    const { theme, version } = yield* service.getTheme(environmentId)
    return json(theme, 200, { etag: service.themeEtag(environmentId, version) })
  })), { summary: "Get an Environment's Hosted Login theme", tags, scope: "environments:read", params: EnvironmentParams, response: Theme }),

  route("PUT", "/v1/environments/:environmentId/theme", withCaller("environments:write", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    const body = yield* decodeJsonBody(ThemeInput)
    const { theme, version } = yield* forgetAfter(environmentId, transaction(service.replaceTheme(environmentId, body)))
    return json(theme, 200, { etag: service.themeEtag(environmentId, version) })
  })), {
    summary: "Replace an Environment's theme (If-Match required; omitted fields take their defaults; no Idempotency-Key)", tags,
    scope: "environments:write", params: EnvironmentParams, body: ThemeInput, response: Theme,
  }),

  route("GET", "/v1/environments/:environmentId/theme/preview-css", withCaller("environments:read", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    const { theme } = yield* service.getTheme(environmentId)
    return HttpServerResponse.text(themeCss(theme), { contentType: "text/css; charset=utf-8", headers: { "cache-control": "no-store" } })
  })), {
    summary: "Preview the theme as the CSS the Hosted Login pages use (text/css)", tags, scope: "environments:read",
    params: EnvironmentParams, response: Schema.String,
  }),

  route("GET", "/v1/environments/:environmentId/rp-migration", withCaller("environments:read", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    return json(yield* service.getRpMigration(environmentId, activeRpIdOf(yield* Config)))
  })), {
    summary: "Get the WebAuthn RP ID migration state (active and legacy RP ID)", tags, scope: "environments:read",
    params: EnvironmentParams, response: RpMigration,
  }),

  route("POST", "/v1/environments/:environmentId/rp-migration/disable-legacy", withCaller("environments:write", Effect.gen(function* () {
    const { environmentId } = yield* decodeParams(EnvironmentParams)
    const config = yield* Config
    return yield* forgetAfter(environmentId, withIdempotency(Effect.gen(function* () {
      const body = yield* decodeJsonBody(DisableLegacyBody)
      return json(yield* service.disableLegacyRp(environmentId, body.confirm_rp_id, activeRpIdOf(config)))
    })))
  })), {
    summary: "Stop accepting the legacy RP ID (irreversible; confirm_rp_id must equal it)", tags, scope: "environments:write",
    params: EnvironmentParams, body: DisableLegacyBody, response: RpMigration, idempotent: true,
  }),
]
