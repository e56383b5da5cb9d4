// The layering of src/, enforced: `npm run lint:layers` and test/foundation/layering.test.ts fail on any
// import that breaks a rule below; `npm run layering:report` prints the figures (arrows, climbs, cycles).
// docs/architecture.md ("Floors") explains the layers in prose.
//
// A ROOM is a top-level folder of src/ (`src/login/`), or the composition root: the files directly in
// src/ plus src/cli/. Rooms stand on FLOORS, listed from the ground up; a room may import its own
// floor's room and any room on a lower floor. Rooms that share a floor never import each other.
// An import to a higher floor is a CLIMB: it is allowed only where CLIMBS below names it, with the
// reason; any other climb fails.

/** Floors from the ground up; each entry lists the rooms on that floor. */
const FLOORS = [
  // Config, database, crypto, keys, events outbox, the job catalogue, outbound (SSRF) guard, logs,
  // metrics: knows no feature and no HTTP.
  ["platform"],
  // Workspaces, Projects, Environments, their URLs and the current Environment of a request.
  ["tenancy"],
  // The shared HTTP plumbing: the app (host dispatch, error rendering), route builder, THE error
  // table, CORS mechanisms, request logs, the metrics endpoint. Knows no feature: the routes are
  // handed in by the composition root.
  ["http"],
  // Rate limits of every surface (login, token endpoint, /me, Management budget).
  ["rate-limit"],
  ["sessions", "usage", "openapi"],
  ["users"],
  // Owns clients, connections and API keys, which login and the issuer read.
  ["management"],
  // Above Management: its intake routes are declared with the Management endpoint builder.
  ["bounces"],
  ["login"],
  ["passkeys", "hosted-login"],
  ["oidc"],
  ["billing", "webhooks"],
  ["me"],
  ["social"],
  // The admin console's backend: sign-in through the platform Environment, who is signed in,
  // invitations and member roles; the console's files.
  ["console"],
  // Assemblies of features that the root starts: the worker's task registry, the operator commands.
  ["jobs", "operator"],
  // The composition root: entry points, the application layer, the route table, the listener.
  ["(root)"],
]

/**
 * The climbs that remain, each a feature reading another's data or rule (not wiring). A room may
 * climb only into the folders listed for it. Keep this list short: a new entry needs a reason.
 */
const CLIMBS = [
  {
    from: "users",
    to: ["src/oidc/refresh/repo.ts"],
    why: "revoking a session revokes its refresh families in the same transaction (lock order of the refresh path)",
  },
  {
    from: "users",
    to: ["src/bounces/recipient.ts"],
    why: "purging a user deletes the bounce and suppression rows keyed by the address's recipient hash",
  },
  {
    from: "management",
    to: ["src/oidc/codes/", "src/oidc/tokens/"],
    why: "impersonation mints a one-time code and tokens the way the issuer does",
  },
  {
    from: "management",
    to: ["src/billing/schema.ts", "src/billing/service.ts"],
    why: "GET /v1/usage/mau reports the Workspace's billing state",
  },
  {
    from: "login",
    to: ["src/oidc/codes/"],
    why: "an authenticated transaction issues the authorization code of its /oauth2/authorize request",
  },
  {
    from: "login",
    to: ["src/social/attach.ts", "src/social/identity-key.ts", "src/social/repo.ts"],
    why: "a link_required transaction attaches the social identity once the account is proved (Email OTP or passkey)",
  },
  { from: "me", to: ["src/social/repo.ts"], why: "linked identities count as sign-in methods (last-factor rule)" },
]

const ROOT = "(root)"
const roomPath = (room) => (room === ROOT ? "^src/(cli/|[^/]+\\.ts$)" : `^src/${room}/`)
const anyOf = (rooms) => rooms.map(roomPath).join("|")
const escapeDots = (path) => path.replace(/[.]/g, "\\.")
const floorOf = (room) => FLOORS.findIndex((floor) => floor.includes(room))

const climbRules = FLOORS.flatMap((floor, level) =>
  floor.map((room) => {
    const above = FLOORS.slice(level + 1).flat()
    const sameFloor = floor.filter((other) => other !== room)
    const allowed = CLIMBS.filter((c) => c.from === room).flatMap((c) => c.to.map((to) => `^${escapeDots(to)}`))
    return {
      name: "no-upward-import",
      comment:
        `${room === ROOT ? "the root" : `src/${room}/`} (floor ${level + 1}) may import only its own room and lower ` +
        "floors, never a room beside it: lower floors must not know who builds on them (docs/architecture.md, Floors).",
      severity: "error",
      from: { path: roomPath(room) },
      to: { path: anyOf([...above, ...sameFloor]), ...(allowed.length > 0 ? { pathNot: allowed.join("|") } : {}) },
    }
  }),
).filter((rule) => rule.to.path !== "")

/** @type {import("dependency-cruiser").IConfiguration} */
const config = {
  forbidden: [
    {
      name: "no-circular",
      comment:
        "A cycle makes load order matter and hides which module owns what; a type-only cycle still " +
        "couples the two files' meaning. Move the shared part into a file both import.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "platform-knows-no-feature",
      comment:
        "platform/ is the ground floor every feature stands on: it imports no feature, no tenancy and no HTTP, " +
        "so it can be read, tested and reused without the rest.",
      severity: "error",
      from: { path: "^src/platform/" },
      to: { path: "^src/", pathNot: "^src/platform/" },
    },
    {
      name: "http-knows-no-feature",
      comment:
        "http/ is the shared HTTP plumbing (app, routes, problems, CORS, logs): features are handed to it " +
        "by the composition root (src/routes.ts), never imported. It stands on platform/ and tenancy/ (every " +
        "request addresses a surface and, on two of them, an Environment).",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: "^src/", pathNot: "^src/(http|platform|tenancy)/" },
    },
    {
      name: "nothing-imports-the-root",
      comment:
        "The composition root (the files directly in src/, and src/cli/) wires features together; a feature " +
        "that imports it depends on everything. Shared code belongs on a floor below.",
      severity: "error",
      from: { path: "^src/", pathNot: roomPath(ROOT) },
      to: { path: roomPath(ROOT) },
    },
    {
      name: "hono-ships-alone",
      comment:
        "packages/hono/ is the npm package @authservice/hono, installed into other applications: it " +
        "imports nothing of the server, only its own files and npm packages.",
      severity: "error",
      from: { path: "^packages/hono/" },
      to: { path: "^(src|packages)/", pathNot: "^packages/hono/" },
    },
    {
      name: "server-without-hono-package",
      comment:
        "The server runs without @authservice/hono (a separate package with its own release): nothing " +
        "in src/ imports it.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^packages/|node_modules/@authservice/hono/" },
    },
    {
      name: "every-room-has-a-floor",
      comment:
        "A new top-level folder of src/ must be placed on a floor in .dependency-cruiser.cjs (or join a " +
        "room), or the climb rules would not see it.",
      severity: "error",
      from: { path: "^src/", pathNot: anyOf(FLOORS.flat()) },
      to: {},
    },
    {
      name: "not-to-unresolvable",
      comment: "An import the cruise cannot resolve is an arrow these rules cannot see.",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
    ...climbRules,
  ],
  options: {
    // TypeScript 7 has no compiler API dependency-cruiser can use yet; swc parses the sources. swc
    // reports `import type` too (verbatimModuleSyntax makes every type-only import say so), and type-only
    // imports count: they couple files as much as value imports do. (tsPreCompilationDeps would ask for
    // the TypeScript compiler API again.)
    parser: "swc",
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.d\\.ts$" },
    // The packages (effect, hono, ...) publish ESM "exports" only.
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types"],
    },
  },
}

// The floor table, for scripts/layering-report.mjs. Not enumerable: dependency-cruiser validates the
// configuration's own keys and would refuse an extra one.
Object.defineProperty(config, "layers", { enumerable: false, value: { FLOORS, CLIMBS, ROOT, floorOf } })

module.exports = config
