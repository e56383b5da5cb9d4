import { type ChildProcess, execFile, spawn } from "node:child_process"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/platform/free-port.js"
import { type SmtpSink, startSmtpSink } from "../login/support.js"
import { type Bootstrapped, startApp, type TestApp } from "../support/app.js"
import { CookieJar, rpFetch, signIn } from "./support.js"

// @authservice/hono as a user gets it from the registry: `npm pack` of packages/hono (its
// `prepack` compiles dist/), and the tarball installed with `npm install` into a temporary
// plain-JavaScript app next to the lowest hono its peer range admits, so the package runs
// against an application's hono that is not the one it was compiled against. Its own
// dependencies (openid-client, jose) come from the registry through npm's cache
// (`--prefer-offline`: a warm cache answers without the network). The app is
// examples/hono-app itself: it registers its own web_bff client with the bootstrap key, and a
// user signs in through it over HTTP against the real server. (docs/decisions/hono.md)

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, "../..")
const PACKAGE = join(ROOT, "packages/hono")
const NODE = join(ROOT, "node_modules/.bin/node")
const PATH = `${join(ROOT, "node_modules/.bin")}:${process.env["PATH"]}`
const env = { ...process.env, PATH }
const manifest = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"))
/** The floor of the peer range (`^4.6.0` -> 4.6.0): the oldest hono users may pair it with. */
const HONO_FLOOR = (manifest.peerDependencies.hono as string).replace(/^\^/, "")

let app: TestApp
let b: Bootstrapped
let smtp: SmtpSink
let work: string
let dir: string
let packed: { filename: string; files: Array<{ path: string }> }
let child: ChildProcess | undefined

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "authservice-hono-package-"))
  dir = join(work, "app")
  const pack = await run("npm", ["pack", "--json", "--pack-destination", work], { cwd: PACKAGE, env })
  packed = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("[")))[0]
  mkdirSync(dir)
  for (const f of ["app.js", "register.js"]) copyFileSync(join(ROOT, "examples/hono-app", f), join(dir, f))
  const example = JSON.parse(readFileSync(join(ROOT, "examples/hono-app/package.json"), "utf8"))
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      {
        ...example,
        dependencies: {
          ...example.dependencies,
          "@authservice/hono": `file:${join(work, packed.filename)}`,
          hono: HONO_FLOOR,
        },
      },
      null,
      2,
    ),
  )
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, env })
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

const node = (args: Array<string>, binary = NODE) =>
  run(binary, args, { cwd: dir }).then(
    ({ stdout }) => ({ ok: true as const, out: stdout.trim() }),
    (e: { stderr: string }) => ({ ok: false as const, out: e.stderr }),
  )

const IMPORT_ALL =
  "const m = await import('@authservice/hono'); console.log(['createAuth','mountAuthRoutes','requireSession','authMiddleware','bearerTokenMiddleware'].map((n) => n + ':' + typeof m[n]).join(' '))"

describe("@authservice/hono from its npm pack tarball", () => {
  it("the tarball holds the compiled JavaScript, its declarations, README, LICENSE and package.json; no sources, tests or maps", () => {
    const files = packed.files.map((f) => f.path).sort()
    expect(files).toContain("dist/index.js")
    expect(files).toContain("dist/index.d.ts")
    expect(files).toEqual(expect.arrayContaining(["LICENSE", "README.md", "package.json"]))
    expect(files.filter((f) => !/^dist\/[a-z-]+\.(js|d\.ts)$/.test(f)).sort()).toEqual([
      "LICENSE",
      "README.md",
      "package.json",
    ])
    const installed = JSON.parse(readFileSync(join(dir, "node_modules/@authservice/hono/package.json"), "utf8"))
    expect(installed).toMatchObject({
      name: "@authservice/hono",
      version: expect.stringMatching(/^0\.\d+\.\d+$/),
      peerDependencies: { hono: expect.stringMatching(/^\^4\./) },
      exports: { ".": { types: "./dist/index.d.ts", import: "./dist/index.js" } },
    })
    expect(installed.dependencies).not.toHaveProperty("hono")
  })

  it("installs next to the app's own hono (the peer range's floor), not a copy of its own", () => {
    expect(JSON.parse(readFileSync(join(dir, "node_modules/hono/package.json"), "utf8")).version).toBe(HONO_FLOOR)
    expect(existsSync(join(dir, "node_modules/@authservice/hono/node_modules/hono"))).toBe(false)
  })

  it("imports the five helpers with plain node (the pinned Node and the system's); CommonJS, the sources and deep paths are not exported", async () => {
    const expected = {
      ok: true,
      out: "createAuth:function mountAuthRoutes:function requireSession:function authMiddleware:function bearerTokenMiddleware:function",
    }
    expect(await node(["--input-type=module", "-e", IMPORT_ALL])).toEqual(expected)
    expect(await node(["--input-type=module", "-e", IMPORT_ALL], "node")).toEqual(expected)
    expect(await node(["-e", "console.log(require.resolve('@authservice/hono'))"])).toMatchObject({ ok: false })
    const deep = await node(["--input-type=module", "-e", "await import('@authservice/hono/dist/seal.js')"])
    expect(deep.out).toContain("ERR_PACKAGE_PATH_NOT_EXPORTED")
    expect(existsSync(join(dir, "node_modules/@authservice/hono/src"))).toBe(false)
  })

  it("TypeScript resolves the declarations through exports: a typed app checks, a misuse does not", async () => {
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          lib: ["ES2023", "DOM"],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        include: ["typed.ts"],
      }),
    )
    const typed = `import { Hono } from "hono"
import { createAuth, mountAuthRoutes, requireSession, bearerTokenMiddleware, type AuthVariables, type BearerVariables } from "@authservice/hono"
const auth = createAuth({ issuer: "https://id.example.com/e/env_x", clientId: "cli_x", clientSecret: "s",
  redirectUri: "https://app.example.com/auth/callback", postLogoutRedirectUri: "https://app.example.com/", cookieSecret: ["x".repeat(32)] })
const app = mountAuthRoutes(new Hono<{ Variables: AuthVariables & BearerVariables }>(), auth)
app.get("/me", requireSession(auth), (c) => c.text(c.get("authUser").sub + c.get("accessToken")))
app.get("/page", requireSession(auth, { onUnauthenticated: "redirect" }), (c) => c.text(c.get("authUser").sub))
app.get("/api", bearerTokenMiddleware({ issuer: "https://id.example.com/e/env_x", audience: "https://api.example.com" }),
  (c) => c.json({ scope: c.get("accessTokenScope"), impersonator: c.get("accessTokenImpersonator") ?? null }))
`
    const tsc = (source: string) => {
      writeFileSync(join(dir, "typed.ts"), source)
      return run(join(ROOT, "node_modules/.bin/tsc"), ["-p", dir]).then(
        () => "ok",
        (e: { stdout: string }) => e.stdout,
      )
    }
    expect(await tsc(typed)).toBe("ok")
    expect(await tsc(`${typed}createAuth({ issuer: 1 })\n`)).toMatch(
      /error TS2322|error TS2345|error TS2739|error TS2740/,
    )
    // audience is required by the type too (the runtime throws a TypeError without it)
    expect(await tsc(`${typed}bearerTokenMiddleware({ issuer: "https://id.example.com/e/env_x" })\n`)).toMatch(
      /error TS2345|error TS2741/,
    )
    expect(await tsc(`${typed}requireSession(auth, { onUnauthenticated: "login" })\n`)).toMatch(/error TS2322/)
  })

  it("imports nothing of the server: only hono, openid-client, jose, node built-ins and its own files", () => {
    const dist = join(dir, "node_modules/@authservice/hono/dist")
    const specifiers = new Set<string>()
    for (const file of readdirSync(dist).filter((f) => f.endsWith(".js"))) {
      for (const m of readFileSync(join(dist, file), "utf8").matchAll(
        /(?:^|\n)\s*(?:import|export)\b[^"']*?from\s*["']([^"']+)["']/g,
      ))
        specifiers.add(m[1]!)
    }
    expect([...specifiers].filter((s) => !s.startsWith("./")).sort()).toEqual([
      "hono/cookie",
      "jose",
      "node:crypto",
      "openid-client",
    ])
  })

  it("the example app signs a user in through Hosted Login; requireSession answers 401 JSON by default and redirects pages that ask for it", async () => {
    writeFileSync(join(dir, "bootstrap.json"), JSON.stringify(b))
    const port = await freePort()
    const origin = `http://localhost:${port}`
    child = spawn(NODE, ["app.js"], {
      cwd: dir,
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let stderr = ""
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()))
    await new Promise<void>((ready, fail) => {
      child!.stdout!.on("data", (c: Buffer) => c.toString().includes("listening") && ready())
      child!.once("exit", (code) => fail(new Error(`example exited with ${code}: ${stderr}`)))
    })
    const rp = { origin }
    // the default: 401 problem JSON, for the page's own fetch calls
    const json = await rpFetch(rp, new CookieJar(), "/session")
    expect(json.status).toBe(401)
    expect(json.headers.get("content-type")).toContain("application/problem+json")
    expect(await json.json()).toMatchObject({
      type: "https://authservice.dev/problems/unauthorized",
      status: 401,
      code: "unauthorized",
    })
    // onUnauthenticated: "redirect": the sign-in, and back here afterwards
    const anonymous = await rpFetch(rp, new CookieJar(), "/profile")
    expect(anonymous.status).toBe(302)
    expect(anonymous.headers.get("location")).toBe("/auth/login?returnTo=%2Fprofile")
    expect((await rpFetch(rp, new CookieJar(), "/api/me")).status).toBe(401)

    const { jar, email, callback } = await signIn(app, b, smtp, rp, { returnTo: "/profile" })
    expect(callback.headers.get("location")).toBe("/profile")
    const profile = await rpFetch(rp, jar, "/profile")
    expect(profile.status).toBe(200)
    expect(await profile.text()).toContain(`<p id="email">${email}</p>`)
    const session = await rpFetch(rp, jar, "/session")
    expect(session.status).toBe(200)
    expect(await session.json()).toMatchObject({
      user: { email },
      session: { scope: expect.arrayContaining(["openid"]) },
    })
    const api = await rpFetch(rp, jar, "/profile/api")
    const page = await api.text()
    expect(page).toContain("GET /api/me: 200")
    expect(page).toMatch(/&quot;sub&quot;:&quot;usr_[a-z2-7]{32}&quot;/)
    expect(await (await rpFetch(rp, jar, "/")).text()).toContain(`Hello ${email}`)

    const out = await rpFetch(rp, jar, "/auth/logout", { method: "POST", headers: { origin } })
    expect(out.status).toBe(303)
    expect(out.headers.get("location")).toContain(`${b.issuer}/oauth2/logout?`)
    expect((await rpFetch(rp, jar, "/profile")).status).toBe(302)
    expect((await rpFetch(rp, jar, "/session")).status).toBe(401)
    // the client was registered once and kept for the next start
    expect(JSON.parse(readFileSync(join(dir, ".client.json"), "utf8"))).toMatchObject({ origin, issuer: b.issuer })
  })
})
