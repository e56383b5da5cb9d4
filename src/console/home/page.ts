import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { escapeHtml, INLINE_STYLE, INLINE_STYLE_PAGE_HEADERS, layout } from "../../hosted-login/page.js"
import { route } from "../../http/route.js"
import { type AppConfig, Config } from "../../platform/config.js"
import { consoleUrl } from "../urls.js"

/** Where the API reference is rendered on the Management host (beside /v1/openapi.json). */
export const API_REFERENCE_PATH = "/v1/reference"

export type HomeHost = "management" | "issuer"

const WHAT: Record<HomeHost, (config: AppConfig) => string> = {
  management: () =>
    "This is the <strong>Management host</strong>: the Management API under <code>/v1</code> (API keys or a console session) and the admin console.",
  issuer: (config) =>
    `This is the <strong>canonical issuer host</strong>: each Environment's OpenID Connect issuer is <code>${escapeHtml(
      `${config.publicScheme}://${config.canonicalIssuerHost}`,
    )}/e/&lt;environment_id&gt;</code>, with its discovery document at <code>/e/&lt;environment_id&gt;/.well-known/openid-configuration</code>.`,
}

/**
 * `/` of the Management and the canonical issuer host: a person who opens the service's address
 * learns what the host is and where to go (docs/decisions/foundation.md, "The first hour"). A
 * page in the Hosted Login style that loads nothing: the stylesheet inlined, admitted by its
 * hash, no script.
 */
export const homePage = (config: AppConfig, host: HomeHost) => {
  const management = `${config.publicScheme}://${config.managementHost}`
  const links = [
    ["Admin console", consoleUrl(config), "Workspaces, Environments, clients, users, webhooks"],
    ["API reference", `${management}${API_REFERENCE_PATH}`, "the Management API and the Public Authentication API"],
    ["OpenAPI document", `${management}/v1/openapi.json`, "for client generators and API tools"],
  ] as const
  const body = `<main id="home" class="card" data-host="${host}">
  <h1>authservice</h1>
  <p>A self-hostable authentication service: per Environment an OpenID Connect issuer, a headless login API with a Hosted Login page, a Management API and signed webhooks.</p>
  <p>${WHAT[host](config)}</p>
  <ul>
${links.map(([name, href, what]) => `    <li><a href="${escapeHtml(href)}">${name}</a>: ${what}</li>`).join("\n")}
  </ul>
  <p class="muted">Documentation: <code>README.md</code> (run it, Quickstart, configuration) and <code>docs/</code> (<code>interface.md</code> is the contract, <code>decisions/</code> the choices) in the service's source.</p>
</main>`
  return HttpServerResponse.text(layout("authservice", body, { inlineStyle: INLINE_STYLE }), {
    contentType: "text/html; charset=utf-8",
    headers: INLINE_STYLE_PAGE_HEADERS,
  })
}

export const homeRoutes = (host: HomeHost) => [
  route(
    "GET",
    "/",
    Effect.gen(function* () {
      return homePage(yield* Config, host)
    }),
  ),
]
