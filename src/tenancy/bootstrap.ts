import { Effect } from "effect"
import { Config } from "../platform/config.js"
import { SCOPES } from "./scopes.js"
import { Tenancy } from "./service.js"
import { environmentUrls } from "./urls.js"

/**
 * Creates a Workspace, a Project, a `test` Environment (with its signing key) and a
 * Workspace-scoped API key holding every scope. Every run creates a new set.
 */
export const bootstrap = Effect.gen(function* () {
  const config = yield* Config
  const tenancy = yield* Tenancy
  const workspace = yield* tenancy.createWorkspace({ name: "Default workspace" })
  const project = yield* tenancy.createProject({ workspaceId: workspace.id, name: "Default project" })
  const environment = yield* tenancy.createEnvironment({
    workspaceId: workspace.id,
    projectId: project.id,
    type: "test",
    name: "Test",
  })
  const key = yield* tenancy.createApiKey({
    workspaceId: workspace.id,
    environmentId: null,
    name: "bootstrap",
    scopes: SCOPES,
    expiresAt: null,
  })
  const record = yield* tenancy.environment(environment.id)
  const urls = environmentUrls(config, record!)
  return {
    workspace_id: workspace.id,
    project_id: project.id,
    environment_id: environment.id,
    api_key: key.secret,
    management_url: `${config.publicScheme}://${config.managementHost}`,
    issuer: urls.issuer,
    interaction_domain: urls.interactionDomain,
  }
})
