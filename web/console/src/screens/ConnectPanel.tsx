import type { ClientCreated } from "../api/types.js"
import { Section } from "../ui.js"

/** "Connect your app": the discovery URL and the tested recipes of docs/oidc-libraries.md, filled in. */
export function ConnectPanel({ issuer, client }: { issuer: string; client: ClientCreated }) {
  const discovery = `${issuer}/.well-known/openid-configuration`
  const redirect = client.redirect_uris[0] ?? "REDIRECT_URI"
  const auth =
    client.token_endpoint_auth_method === "client_secret_post"
      ? "ClientSecretPost(CLIENT_SECRET)"
      : client.token_endpoint_auth_method === "none"
        ? "None()"
        : "ClientSecretBasic(CLIENT_SECRET)"
  const node = `import * as client from "openid-client"

const config = await client.discovery(new URL("${issuer}"), "${client.id}", undefined, client.${auth})
const verifier = client.randomPKCECodeVerifier()
const state = client.randomState()
const nonce = client.randomNonce()
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: "${redirect}", scope: "openid profile email offline_access", state, nonce,
  code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
})
// after the browser comes back to ${redirect}:
const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
  pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true,
})`
  const spa = `import { UserManager } from "oidc-client-ts"

const manager = new UserManager({
  authority: "${issuer}", client_id: "${client.id}", redirect_uri: "${redirect}",
  response_type: "code", scope: "openid profile email offline_access",
})
await manager.signinRedirect({ nonce: crypto.randomUUID() }) // a nonce is required`
  return (
    <Section title="Connect your app">
      <dl className="facts">
        <dt>Issuer</dt>
        <dd>
          <code>{issuer}</code>
        </dd>
        <dt>Discovery URL</dt>
        <dd>
          <code>{discovery}</code>
        </dd>
        <dt>Client ID</dt>
        <dd>
          <code>{client.id}</code>
        </dd>
        <dt>Authentication</dt>
        <dd>{client.token_endpoint_auth_method}; PKCE S256, state and nonce on every sign-in</dd>
      </dl>
      <h3>openid-client (Node)</h3>
      <pre tabIndex={0}>
        <code>{node}</code>
      </pre>
      {client.client_type === "web_spa" && (
        <>
          <h3>oidc-client-ts (browser)</h3>
          <pre tabIndex={0}>
            <code>{spa}</code>
          </pre>
        </>
      )}
      <p className="hint">More libraries and their settings: docs/oidc-libraries.md in the repository.</p>
    </Section>
  )
}
