import { type ChildProcess, execFile, spawn } from "node:child_process"
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Bootstrapped, type TestApp, startApp } from "../support/app.js"
import { freePort } from "../../src/platform/embedded-postgres.js"
import { type SmtpSink, startSmtpSink } from "../login/support.js"
import { CookieJar, rpFetch, signIn } from "./support.js"

// authservice/hono as a user gets it. A fresh clone of the committed HEAD (lib/ is not in git)
// is `npm install`ed into a temporary plain-JavaScript app: npm 11 links a folder dependency
// and runs its `prepare` (`npm run build:hono`) in that folder, which compiles lib/hono in the
// clone; nothing here builds it by hand, and the project folder's own lib/ is never touched.
// The clone's node_modules is a link to this checkout's (the README's `npm install` already ran
// there; the machine is offline). The app gets its own copies of hono and @hono/node-server,
// packed from this checkout's installed ones (a registry install by name cannot run offline:
// npm's cache here holds the tarballs but not the metadata document npm 11 asks for first), so
// authservice/hono runs against an application's hono that is not the module it compiled
// against. The app is examples/hono-app itself, so the example is proven too: it registers
// its own web_bff client with the bootstrap key, and a user signs in through it.

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, "../..")
const NODE = join(ROOT, "node_modules/.bin/node")
const PATH = `${join(ROOT, "node_modules/.bin")}:${process.env["PATH"]}`
const env = { ...process.env, PATH }

/** The project folder's lib/ as files and modification times: the test must leave it as it is. */
const projectLib = () => {
  const libDir = join(ROOT, "lib/hono")
  return existsSync(libDir) ? readdirSync(libDir).sort().map((f) => `${f}@${statSync(join(libDir, f)).mtimeMs}`) : []
}

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let work: string
let clone: string
let dir: string
let installLog: string
let libBeforeInstall: boolean
let child: ChildProcess | undefined
const projectLibBefore = projectLib()

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "authservice-package-"))
  clone = join(work, "authservice")
  dir = join(work, "app")
  const head = (await run("git", ["-C", ROOT, "rev-parse", "HEAD"])).stdout.trim()
  await run("git", ["clone", "--quiet", "--no-checkout", ROOT, clone])
  await run("git", ["-C", clone, "checkout", "--quiet", "--detach", head])
  libBeforeInstall = existsSync(join(clone, "lib"))
  symlinkSync(realpathSync(join(ROOT, "node_modules")), join(clone, "node_modules"))

  // The app's own hono and @hono/node-server: tarballs of this checkout's copies, installed as files.
  const packs = join(work, "packs")
  mkdirSync(packs)
  await run("npm", ["pack", "--ignore-scripts", "--offline", "--pack-destination", packs,
    join(ROOT, "node_modules/hono"), join(ROOT, "node_modules/@hono/node-server")], { env })
  const tarball = (prefix: string) => join(packs, readdirSync(packs).find((f) => f.startsWith(prefix))!)

  mkdirSync(dir)
  for (const f of ["app.js", "register.js"]) copyFileSync(join(clone, "examples/hono-app", f), join(dir, f))
  writeFileSync(join(dir, "package.json"), JSON.stringify({
    ...JSON.parse(readFileSync(join(clone, "examples/hono-app/package.json"), "utf8")),
    dependencies: {
      hono: `file:${tarball("hono-4")}`,
      "@hono/node-server": `file:${tarball("hono-node-server-")}`,
    },
  }, null, 2))
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund"], { cwd: dir, env })
  // As the README says: `npm install <path to the project>`.
  const installed = await run("npm", ["install", "--offline", "--no-audit", "--no-fund", clone], { cwd: dir, env })
  installLog = installed.stdout + installed.stderr
  smtp = await startSmtpSink()
  app = await startApp({ worker: true, env: { SMTP_URL: smtp.url } })
  b = await app.bootstrap()
}, 180_000)

afterAll(async () => {
  child?.kill("SIGTERM")
  await app?.close()
  await smtp?.close()
  if (work) rmSync(work, { recursive: true, force: true })
})

const node = (args: Array<string>) => run(NODE, args, { cwd: dir }).then(
  ({ stdout }) => ({ ok: true as const, out: stdout.trim() }),
  (e: { stderr: string }) => ({ ok: false as const, out: e.stderr }),
)

describe("authservice/hono installed into a plain JavaScript app", () => {
  it("npm install <fresh clone> runs the package's prepare, which builds lib/hono in the clone; the project's lib/ is untouched", async () => {
    expect(libBeforeInstall).toBe(false)
    expect(existsSync(join(clone, "lib/hono/index.js"))).toBe(true)
    expect(existsSync(join(clone, "lib/hono/index.d.ts"))).toBe(true)
    // npm links the folder (no copy), so the app runs the clone's lib
    expect(lstatSync(join(dir, "node_modules/authservice")).isSymbolicLink()).toBe(true)
    const resolved = await node(["--input-type=module", "-e", "console.log(import.meta.resolve('authservice/hono'))"])
    expect(resolved).toEqual({ ok: true, out: `file://${realpathSync(clone)}/lib/hono/index.js` })
    // the app's hono is its own installed copy, not a link to the project's
    expect(lstatSync(join(dir, "node_modules/hono")).isSymbolicLink()).toBe(false)
    expect(realpathSync(join(dir, "node_modules/hono"))).toBe(join(realpathSync(dir), "node_modules/hono"))
    expect(JSON.parse(readFileSync(join(dir, "node_modules/hono/package.json"), "utf8")).version).toBe("4.13.19")
    expect(projectLib()).toEqual(projectLibBefore)
    expect(installLog).not.toMatch(/npm error/)
  })

  it("imports the five helpers from authservice/hono with plain node; the root and the sources are not exported", async () => {
    const names = await node(["--input-type=module", "-e",
      "const m = await import('authservice/hono'); console.log(['createAuth','mountAuthRoutes','requireSession','authMiddleware','bearerTokenMiddleware'].map((n) => n + ':' + typeof m[n]).join(' '))"])
    expect(names).toEqual({ ok: true, out: "createAuth:function mountAuthRoutes:function requireSession:function authMiddleware:function bearerTokenMiddleware:function" })
    expect(await node(["-e", "console.log(require.resolve('authservice/hono'))"])).toMatchObject({ ok: false })
    const root = await node(["--input-type=module", "-e", "await import('authservice')"])
    expect(root.ok).toBe(false)
    expect(root.out).toContain("ERR_PACKAGE_PATH_NOT_EXPORTED")
    const deep = await node(["--input-type=module", "-e", "await import('authservice/src/hono/index.ts')"])
    expect(deep.out).toContain("ERR_PACKAGE_PATH_NOT_EXPORTED")
  })

  it("ships type declarations next to the JavaScript, named by exports", () => {
    const pkg = JSON.parse(readFileSync(join(dir, "node_modules/authservice/package.json"), "utf8"))
    expect(pkg.exports["./hono"]).toEqual({ types: "./lib/hono/index.d.ts", import: "./lib/hono/index.js" })
    const dts = readFileSync(join(dir, "node_modules/authservice/lib/hono/index.d.ts"), "utf8")
    for (const name of ["createAuth", "mountAuthRoutes", "requireSession", "authMiddleware", "bearerTokenMiddleware", "AuthVariables"]) {
      expect(dts).toContain(name)
    }
  })

  it("TypeScript resolves the declarations through exports: a typed app checks, a misuse does not", async () => {
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", lib: ["ES2023", "DOM"], strict: true, noEmit: true, skipLibCheck: true, types: [] },
      include: ["typed.ts"],
    }))
    const typed = `import { Hono } from "hono"
import { createAuth, mountAuthRoutes, requireSession, bearerTokenMiddleware, type AuthVariables, type BearerVariables } from "authservice/hono"
const auth = createAuth({ issuer: "https://id.example.com/e/env_x", clientId: "cli_x", clientSecret: "s",
  redirectUri: "https://app.example.com/auth/callback", postLogoutRedirectUri: "https://app.example.com/", cookieSecret: ["x".repeat(32)] })
const app = mountAuthRoutes(new Hono<{ Variables: AuthVariables & BearerVariables }>(), auth)
app.get("/me", requireSession(auth), (c) => c.text(c.get("authUser").sub + c.get("accessToken")))
app.get("/api", bearerTokenMiddleware({ issuer: "https://id.example.com/e/env_x", audience: "https://api.example.com" }),
  (c) => c.json({ scope: c.get("accessTokenScope"), impersonator: c.get("accessTokenImpersonator") ?? null }))
`
    const tsc = (source: string) => {
      writeFileSync(join(dir, "typed.ts"), source)
      return run(join(ROOT, "node_modules/.bin/tsc"), ["-p", dir]).then(() => "ok", (e: { stdout: string }) => e.stdout)
    }
    expect(await tsc(typed)).toBe("ok")
    expect(await tsc(typed + "createAuth({ issuer: 1 })\n")).toMatch(/error TS2322|error TS2345|error TS2739|error TS2740/)
    // audience is required by the type too (the runtime throws a TypeError without it)
    expect(await tsc(typed + "bearerTokenMiddleware({ issuer: \"https://id.example.com/e/env_x\" })\n")).toMatch(/error TS2345|error TS2741/)
  })

  it("imports nothing of the server: only hono, openid-client, jose, node built-ins and its own files", () => {
    const libDir = join(clone, "lib/hono")
    const specifiers = new Set<string>()
    for (const file of readdirSync(libDir).filter((f) => f.endsWith(".js"))) {
      for (const m of readFileSync(join(libDir, file), "utf8").matchAll(/(?:^|\n)\s*(?:import|export)\b[^"']*?from\s*["']([^"']+)["']/g)) specifiers.add(m[1]!)
    }
    const external = [...specifiers].filter((s) => !s.startsWith("./")).sort()
    expect(external).toEqual(["hono/cookie", "jose", "node:crypto", "openid-client"])
  })

  it("the example app signs a user in through Hosted Login, shows the protected page and calls its bearer-protected API", async () => {
    writeFileSync(join(dir, "bootstrap.json"), JSON.stringify(b))
    const port = await freePort()
    const origin = `http://localhost:${port}`
    child = spawn(NODE, ["app.js"], { cwd: dir, env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })
    let stderr = ""
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()))
    await new Promise<void>((ready, fail) => {
      child!.stdout!.on("data", (c: Buffer) => c.toString().includes("listening") && ready())
      child!.once("exit", (code) => fail(new Error(`example exited with ${code}: ${stderr}`)))
    })
    const rp = { origin }
    const anonymous = await rpFetch(rp, new CookieJar(), "/profile")
    expect(anonymous.status).toBe(302)
    expect(anonymous.headers.get("location")).toBe("/auth/login?returnTo=%2Fprofile")
    expect((await rpFetch(rp, new CookieJar(), "/api/me")).status).toBe(401)

    const { jar, email, callback } = await signIn(app, b, smtp, rp, { returnTo: "/profile" })
    expect(callback.headers.get("location")).toBe("/profile")
    const profile = await rpFetch(rp, jar, "/profile")
    expect(profile.status).toBe(200)
    expect(await profile.text()).toContain(`<p id="email">${email}</p>`)
    const api = await rpFetch(rp, jar, "/profile/api")
    const page = await api.text()
    expect(page).toContain("GET /api/me: 200")
    expect(page).toMatch(/&quot;sub&quot;:&quot;usr_[a-z2-7]{32}&quot;/)
    const home = await rpFetch(rp, jar, "/")
    expect(await home.text()).toContain(`Hello ${email}`)

    const out = await rpFetch(rp, jar, "/auth/logout", { method: "POST", headers: { origin } })
    expect(out.status).toBe(303)
    expect(out.headers.get("location")).toContain(`${b.issuer}/oauth2/logout?`)
    expect((await rpFetch(rp, jar, "/profile")).status).toBe(302)
    // the client was registered once and kept for the next start
    expect(JSON.parse(readFileSync(join(dir, ".client.json"), "utf8"))).toMatchObject({ origin, issuer: b.issuer })
  })
})
