import { randomBytes } from "node:crypto"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { request } from "node:http"

/**
 * First run only: registers this app as a `web_bff` Client of the bootstrapped Environment
 * (POST /v1/clients with the bootstrap API key) and keeps the client id, its secret (shown
 * once) and a cookie secret in `.client.json`. Later runs reuse that file.
 */
const CLIENT_FILE = new URL("./.client.json", import.meta.url)

/** The Management API on MANAGEMENT_HOST, reached at 127.0.0.1 with that Host (no DNS for *.localhost needed). */
const managementPost = (managementUrl, apiKey, path, body) =>
  new Promise((resolve, reject) => {
    const url = new URL(managementUrl)
    const data = JSON.stringify(body)
    const req = request(
      {
        host: url.hostname.endsWith("localhost") ? "127.0.0.1" : url.hostname,
        port: url.port || 80,
        path: `/v1${path}`,
        method: "POST",
        headers: {
          host: url.host,
          authorization: `Bearer ${apiKey}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(data),
        },
      },
      (res) => {
        let text = ""
        res.on("data", (c) => (text += c))
        res.on("end", () =>
          res.statusCode === 201
            ? resolve(JSON.parse(text))
            : reject(new Error(`POST ${path}: ${res.statusCode} ${text}`)),
        )
      },
    )
    req.on("error", reject)
    req.end(data)
  })

export const loadOrRegisterClient = async ({ bootstrapFile, origin }) => {
  if (existsSync(CLIENT_FILE)) {
    const saved = JSON.parse(readFileSync(CLIENT_FILE, "utf8"))
    if (saved.origin === origin) return saved
  }
  if (!existsSync(bootstrapFile)) {
    throw new Error(
      `No ${bootstrapFile}: run \`npm run -s cli -- bootstrap --json > examples/hono-app/bootstrap.json\` in the project first.`,
    )
  }
  const b = JSON.parse(readFileSync(bootstrapFile, "utf8"))
  const client = await managementPost(b.management_url, b.api_key, "/clients", {
    environment_id: b.environment_id,
    client_type: "web_bff",
    name: "Hono example",
    token_endpoint_auth_method: "client_secret_basic",
    redirect_uris: [`${origin}/auth/callback`],
    post_logout_redirect_uris: [`${origin}/`],
    allowed_scopes: ["openid", "profile", "email", "offline_access"],
  })
  const saved = {
    origin,
    issuer: b.issuer,
    clientId: client.id,
    clientSecret: client.client_secret,
    cookieSecret: randomBytes(32).toString("base64url"),
  }
  writeFileSync(CLIENT_FILE, JSON.stringify(saved, null, 2), { mode: 0o600 })
  return saved
}
