import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A test certificate authority and one server certificate, made at run time with the
 * openssl CLI (nothing secret is checked in). The server certificate names loopback and
 * the host names of the providers whose sockets SOCIAL_PROVIDER_HOSTS moves to local fake
 * servers, so TLS is verified exactly as against the real providers. The global setup puts
 * the CA in NODE_EXTRA_CA_CERTS before the test workers start: Node trusts it by itself.
 */
export const PROVIDER_HOST_NAMES = [
  "accounts.google.com", "oauth2.googleapis.com", "www.googleapis.com", "openidconnect.googleapis.com",
  "login.microsoftonline.com", "github.com", "api.github.com", "appleid.apple.com",
] as const

export interface TestTls {
  readonly caFile: string
  readonly key: string
  readonly cert: string
}

export const makeTestTls = (): TestTls => {
  const dir = mkdtempSync(join(tmpdir(), "authservice-test-ca-"))
  const file = (name: string) => join(dir, name)
  const openssl = (...args: Array<string>) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] })
  openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file("ca.key"))
  openssl("req", "-x509", "-new", "-key", file("ca.key"), "-sha256", "-days", "2", "-subj", "/CN=authservice test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", file("ca.pem"))
  openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", file("server.key"))
  openssl("req", "-new", "-key", file("server.key"), "-subj", "/CN=localhost", "-out", file("server.csr"))
  const names = ["DNS:localhost", "IP:127.0.0.1", ...PROVIDER_HOST_NAMES.map((h) => `DNS:${h}`)]
  writeFileSync(file("server.ext"), [
    "basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth", `subjectAltName=${names.join(",")}`,
  ].join("\n"))
  openssl("x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial",
    "-days", "2", "-sha256", "-extfile", file("server.ext"), "-out", file("server.pem"))
  return { caFile: file("ca.pem"), key: readFileSync(file("server.key"), "utf8"), cert: readFileSync(file("server.pem"), "utf8") }
}
