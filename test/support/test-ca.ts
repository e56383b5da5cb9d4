// @peculiar/x509 resolves its algorithms through tsyringe, which needs a Reflect metadata polyfill loaded first.
import "reflect-metadata"
import * as x509 from "@peculiar/x509"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A test certificate authority and one server certificate, made at run time in JavaScript
 * (nothing secret is checked in, and no system tool such as openssl is needed). The server
 * certificate names loopback and the host names of the providers whose sockets
 * SOCIAL_PROVIDER_HOSTS moves to local fake servers, so TLS is verified exactly as against the
 * real providers. The global setup puts the CA in NODE_EXTRA_CA_CERTS before the test workers
 * start: Node trusts it by itself.
 */
export const PROVIDER_HOST_NAMES = [
  "accounts.google.com",
  "oauth2.googleapis.com",
  "www.googleapis.com",
  "openidconnect.googleapis.com",
  "login.microsoftonline.com",
  "github.com",
  "api.github.com",
  "appleid.apple.com",
] as const

export interface TestTls {
  readonly caFile: string
  readonly key: string
  readonly cert: string
}

const P256 = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const
const DAY_MS = 86_400_000

const pkcs8Pem = async (key: CryptoKey) =>
  x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY")

/**
 * `alsoTrusted`: a PEM file the machine already names in NODE_EXTRA_CA_CERTS (a TLS-inspecting
 * proxy in front of the npm registry, say). Node reads one such file, so the run's file carries
 * those certificates after the test CA, and tests that reach the registry keep working.
 */
export const makeTestTls = async (alsoTrusted?: string): Promise<TestTls> => {
  // Test-harness time, not service time: the certificates are valid from a day back (clock skew) for two days.
  const now = Date.now()
  const validity = { notBefore: new Date(now - DAY_MS), notAfter: new Date(now + 2 * DAY_MS) }
  const caKeys = await crypto.subtle.generateKey(P256, true, ["sign", "verify"])
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=authservice test CA",
    keys: caKeys,
    signingAlgorithm: P256,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  })
  const serverKeys = await crypto.subtle.generateKey(P256, true, ["sign", "verify"])
  const names: Array<x509.JsonGeneralName> = [
    { type: "dns", value: "localhost" },
    { type: "ip", value: "127.0.0.1" },
    ...PROVIDER_HOST_NAMES.map((value) => ({ type: "dns" as const, value })),
  ]
  const server = await x509.X509CertificateGenerator.create({
    subject: "CN=localhost",
    issuer: ca.subject,
    publicKey: serverKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: P256,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(false),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  })
  const caFile = join(mkdtempSync(join(tmpdir(), "authservice-test-ca-")), "ca.pem")
  const inherited = alsoTrusted && existsSync(alsoTrusted) ? readFileSync(alsoTrusted, "utf8") : ""
  writeFileSync(caFile, `${ca.toString("pem")}\n${inherited}`)
  return { caFile, key: await pkcs8Pem(serverKeys.privateKey), cert: server.toString("pem") }
}
