import { Effect } from "effect"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { route } from "../../http/route.js"
import { answerStatic } from "../../http/static-answers.js"

/** Spec: OIDC / Discovery. Every endpoint lives under the Environment's issuer. */
export const discoveryDocument = (issuer: string) => ({
  issuer,
  authorization_endpoint: `${issuer}/oauth2/authorize`,
  token_endpoint: `${issuer}/oauth2/token`,
  userinfo_endpoint: `${issuer}/oauth2/userinfo`,
  jwks_uri: `${issuer}/oauth2/jwks`,
  revocation_endpoint: `${issuer}/oauth2/revoke`,
  introspection_endpoint: `${issuer}/oauth2/introspect`,
  end_session_endpoint: `${issuer}/oauth2/logout`,
  response_types_supported: ["code"],
  response_modes_supported: ["query"],
  grant_types_supported: ["authorization_code", "refresh_token"],
  code_challenge_methods_supported: ["S256"],
  token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
  // Revocation takes no client authentication (spec: Revoke); credentials sent anyway are ignored.
  revocation_endpoint_auth_methods_supported: ["none"],
  introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
  scopes_supported: ["openid", "profile", "email", "offline_access"],
  subject_types_supported: ["public"],
  id_token_signing_alg_values_supported: ["ES256"],
  claims_supported: [
    "iss",
    "sub",
    "aud",
    "exp",
    "iat",
    "jti",
    "sid",
    "client_id",
    "scope",
    "amr",
    "acr",
    "auth_time",
    "sv",
    "nonce",
    "name",
    "email",
    "email_verified",
    "locale",
    "updated_at",
  ],
  // Capabilities whose absence a library reads with a default that is wrong for us (docs/decisions/rp-libraries.md;
  // OIDC Discovery 3 defaults request_uri_parameter_supported to true). /oauth2/authorize answers
  // `request` and `request_uri` with request_not_supported / request_uri_not_supported at the
  // redirect URI (OIDC Core 6); `claims` is not honoured (the scopes alone decide the claims).
  request_parameter_supported: false,
  request_uri_parameter_supported: false,
  claims_parameter_supported: false,
  // RFC 9207: every authorization response (code or error) carries `iss` (src/hosted-login).
  authorization_response_iss_parameter_supported: true,
})

/** As src/oidc/jwks/http.ts: the same headers on the Effect path and from the listener's memory. */
const HEADERS = {
  "content-type": "application/json",
  "cache-control": "public, max-age=60",
  "access-control-allow-origin": "*",
}

export const discoveryRoutes = [
  route(
    "GET",
    "/.well-known/openid-configuration",
    Effect.gen(function* () {
      const env = yield* CurrentEnvironment
      return yield* answerStatic(
        "/.well-known/openid-configuration",
        JSON.stringify(discoveryDocument(env.urls.issuer)),
        HEADERS,
      )
    }),
  ),
]
