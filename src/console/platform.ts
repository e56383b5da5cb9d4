import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as clients from "../management/clients/repo.js"
import { Config } from "../platform/config.js"
import { Ids } from "../platform/ids.js"
import { Tenancy } from "../tenancy/service.js"
import { issuerOf } from "../tenancy/urls.js"
import { consoleCallbackUrl, consoleUrl } from "./urls.js"

export interface PlatformEnvironment {
  readonly environmentId: string
  readonly clientId: string
  readonly issuer: string
}

/**
 * The Environment platform users sign in with (docs/decisions/admin-console.md, "Dogfooding"):
 * a Workspace of its own that no platform user is a member of, a `production` Environment and one
 * public `web_spa` client whose redirect URI is the console's callback. Created on first use
 * under an advisory lock (two servers starting at once make one). The redirect URIs follow the
 * configuration (a new port or MANAGEMENT_HOST), so they are set again when they differ.
 */
export const platformEnvironment = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const config = yield* Config
  const redirectUris = [consoleCallbackUrl(config)]
  const postLogoutUris = [consoleUrl(config)]
  const found = yield* sql<{
    environment_id: string
    client_id: string
  }>`select environment_id, client_id from console_platform`
  const known = found[0]
  if (known) {
    const [client] = yield* sql<{ redirect_uris: Array<string>; post_logout_redirect_uris: Array<string> }>`
      select redirect_uris, post_logout_redirect_uris from clients where id = ${known.client_id}`
    if (
      client &&
      (client.redirect_uris.join(" ") !== redirectUris.join(" ") ||
        client.post_logout_redirect_uris.join(" ") !== postLogoutUris.join(" "))
    ) {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* sql`update clients set redirect_uris = ${redirectUris}::text[], post_logout_redirect_uris = ${postLogoutUris}::text[],
        updated_at = ${now}, version = version + 1 where id = ${known.client_id}`
    }
    return {
      environmentId: known.environment_id,
      clientId: known.client_id,
      issuer: issuerOf(config, known.environment_id),
    }
  }
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`select pg_advisory_xact_lock(hashtextextended('console_platform', 0))`
      const [raced] = yield* sql<{
        environment_id: string
        client_id: string
      }>`select environment_id, client_id from console_platform`
      if (raced)
        return {
          environmentId: raced.environment_id,
          clientId: raced.client_id,
          issuer: issuerOf(config, raced.environment_id),
        }
      const tenancy = yield* Tenancy
      const ids = yield* Ids
      const workspace = yield* tenancy.createWorkspace({ name: "Platform (console sign-in)" })
      const project = yield* tenancy.createProject({ workspaceId: workspace.id, name: "Console" })
      const environment = yield* tenancy.createEnvironment({
        workspaceId: workspace.id,
        projectId: project.id,
        type: "production",
        name: "Platform users",
      })
      const clientId = yield* ids.make("cli")
      const now = new Date(yield* Clock.currentTimeMillis)
      // Inserted directly: `http://api.localhost` (the development Management host) is a loopback
      // host the public registration rules do not list, and this client is the service's own.
      yield* clients.insertClient({
        id: clientId,
        workspaceId: workspace.id,
        environmentId: environment.id,
        clientType: "web_spa",
        secretHash: null,
        now,
        name: "Admin console",
        token_endpoint_auth_method: "none",
        redirect_uris: redirectUris,
        post_logout_redirect_uris: postLogoutUris,
        allowed_origins: [],
        allowed_scopes: ["openid", "email"],
        allowed_resources: [],
        require_pkce: true,
        status: "active",
        mobile_app: null,
      })
      yield* sql`insert into console_platform (workspace_id, environment_id, client_id, created_at)
      values (${workspace.id}, ${environment.id}, ${clientId}, ${now})`
      return { environmentId: environment.id, clientId, issuer: issuerOf(config, environment.id) }
    }),
  )
}).pipe(Effect.orDie, Effect.withSpan("console.platformEnvironment"))
