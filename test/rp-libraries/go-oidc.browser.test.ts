import { execFile } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, it } from "vitest"
import { walkRecipe } from "./recipe-walk.js"
import { type Harness, missingDebianPackages, startHarness, suiteNeeding } from "./support.js"

// The Go recipe of docs/oidc-libraries.md: github.com/coreos/go-oidc with golang.org/x/oauth2,
// built from Debian's packages (GOPATH mode, no module download) and run unmodified against the
// real server. A real Chromium signs in on Hosted Login; the app checks state and iss, exchanges
// the code with PKCE, verifies the ID token (ES256, JWKS) and its nonce, calls UserInfo,
// refreshes, and logs out at the issuer.

const PACKAGES = ["golang-go", "golang-github-coreos-go-oidc-dev", "golang-golang-x-oauth2-dev"]
const missing = missingDebianPackages(PACKAGES)
const SOURCE_DIR = fileURLToPath(new URL("./apps/go-oidc/", import.meta.url))

describe.skipIf(missing.length > 0)(suiteNeeding("go-oidc (Go)", missing), () => {
  let h: Harness
  let buildDir: string
  let binary: string
  const stops: Array<() => Promise<void>> = []
  beforeAll(async () => {
    buildDir = mkdtempSync(join(tmpdir(), "go-oidc-rp-"))
    binary = join(buildDir, "rp")
    await promisify(execFile)("go", ["build", "-o", binary, "main.go"], {
      cwd: SOURCE_DIR,
      env: {
        ...process.env,
        GO111MODULE: "off",
        GOPATH: "/usr/share/gocode",
        GOCACHE: join(tmpdir(), "authservice-go-build-cache"),
        GOFLAGS: "",
      },
    })
    h = await startHarness()
  }, 180_000)
  afterAll(async () => {
    for (const stop of stops) await stop()
    await h?.close()
    rmSync(buildDir, { recursive: true, force: true })
  })

  it.each(["client_secret_basic", "client_secret_post"] as const)(
    "signs in with %s: ID token, UserInfo, refresh, logout at the issuer",
    (method) => walkRecipe(h, { command: binary }, method, `go-oidc-${method}`, stops),
  )
})
