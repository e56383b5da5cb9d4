/**
 * Why a process could not start, as ONE line: the real cause (found at the bottom of the error's
 * chain, where the driver or the socket put it) and what to change. Wrappers such as "Failed to
 * connect" say nothing the cause does not, so they are dropped, and nothing unknown ever prints as
 * `undefined` (docs/decisions/foundation.md, "Start failures").
 */

export interface StartContext {
  /** The configured DATABASE_URL (unset: the embedded Postgres). */
  readonly databaseUrl: string | undefined
  readonly port: number
  readonly metricsPort?: number | undefined
}

interface Found {
  readonly code?: string
  readonly message?: string
  readonly address?: string
  readonly port?: number
  readonly syscall?: string
}

const fieldsOf = (value: unknown): Found | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const v = value as Record<string, unknown>
  return {
    ...(typeof v["code"] === "string" ? { code: v["code"] } : {}),
    ...(typeof v["message"] === "string" && v["message"] !== "" ? { message: v["message"] } : {}),
    ...(typeof v["address"] === "string" ? { address: v["address"] } : {}),
    ...(typeof v["port"] === "number" ? { port: v["port"] } : {}),
    ...(typeof v["syscall"] === "string" ? { syscall: v["syscall"] } : {}),
  }
}

/** Every error along `reason` / `cause` / `errors` links, outermost first (bounded, cycles cut). */
export const errorChain = (error: unknown): ReadonlyArray<unknown> => {
  const chain: Array<unknown> = []
  const queue: Array<unknown> = [error]
  while (queue.length > 0 && chain.length < 20) {
    const next = queue.shift()
    if (next === undefined || next === null || chain.includes(next)) continue
    chain.push(next)
    if (typeof next === "object") {
      const o = next as Record<string, unknown>
      queue.push(o["reason"], o["cause"])
      if (Array.isArray(o["errors"])) queue.push(...(o["errors"] as Array<unknown>))
    }
  }
  return chain
}

/** The innermost error that carries a code (a socket errno or a PostgreSQL SQLSTATE). */
const rootCause = (error: unknown): Found | undefined => {
  const coded = errorChain(error)
    .map(fieldsOf)
    .filter((f): f is Found => f?.code !== undefined)
  return coded.at(-1)
}

/** host:port/database of a Postgres URL, never its password. */
export const describeDatabase = (url: string | undefined) => {
  if (url === undefined) return "the embedded Postgres"
  try {
    const u = new URL(url)
    const host = u.hostname || (u.searchParams.get("host") ?? "localhost")
    return `${u.username ? `${decodeURIComponent(u.username)}@` : ""}${host}:${u.port || "5432"}${u.pathname.length > 1 ? u.pathname : "/"}`
  } catch {
    return "DATABASE_URL (not a valid URL)"
  }
}

const databaseName = (url: string | undefined) => {
  try {
    return url === undefined ? undefined : decodeURIComponent(new URL(url).pathname.slice(1)) || undefined
  } catch {
    return undefined
  }
}

/** A plain text for anything thrown: never `undefined`, never `[object Object]`. */
export const describeUnknown = (error: unknown): string => {
  for (const link of errorChain(error)) {
    const f = fieldsOf(link)
    const message = f?.message?.split("\n")[0]?.trim()
    if (message) return message
  }
  if (error === undefined || error === null) return "an unexplained failure (no error was given)"
  if (typeof error === "object") {
    const tag = (error as { _tag?: unknown })._tag
    if (typeof tag === "string") return tag
    try {
      return JSON.stringify(error)
    } catch {
      return Object.prototype.toString.call(error)
    }
  }
  return String(error)
}

/** The listener's bind failure, if this is one: which port, and how to pick another. */
const listenFailure = (found: Found | undefined, context: StartContext) => {
  if (found?.code !== "EADDRINUSE" && found?.code !== "EACCES") return undefined
  const port = found.port ?? context.port
  const variable = port === context.metricsPort && port !== context.port ? "METRICS_PORT" : "PORT"
  const other = port === 3000 ? 3100 : port + 1
  return found.code === "EADDRINUSE"
    ? `port ${port} is already in use (another process listens on it, perhaps an earlier authservice): stop that process, or choose another port, e.g. ${variable}=${other}`
    : `no permission to listen on port ${port}: choose a port above 1023, e.g. ${variable}=${other}`
}

/** What a database connection failure means, and its fix. */
const databaseFailure = (found: Found | undefined, context: StartContext) => {
  if (found?.code === undefined) return undefined
  const where = describeDatabase(context.databaseUrl)
  const fix = context.databaseUrl === undefined ? "" : " (DATABASE_URL)"
  const say = (cause: string, todo: string) => `cannot use the database ${where}: ${cause}; ${todo}`
  switch (found.code) {
    case "ECONNREFUSED":
      return say(
        "connection refused (nothing listens there)",
        `start Postgres there, or correct the host and port${fix}`,
      )
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return say(`the host name does not resolve (${found.code})`, `correct the host${fix}`)
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return say(
        `no answer (${found.code})`,
        `check the host and port${fix} and that a firewall lets this machine reach it`,
      )
    case "ECONNRESET":
      return say(
        "the server closed the connection (ECONNRESET)",
        `check that the port${fix} is Postgres's and whether it requires TLS (sslmode)`,
      )
    case "28P01":
      return say(
        `password authentication failed${found.message ? ` (${found.message})` : ""}`,
        `correct the user name and password${fix}`,
      )
    case "28000":
      return say(
        found.message ?? "the server refused this user or client address",
        `correct the user${fix}, or allow this client in the server's pg_hba.conf`,
      )
    case "3D000": {
      const name = databaseName(context.databaseUrl)
      return say(
        found.message ?? "the database does not exist",
        `create it (${name ? `createdb ${name}, or CREATE DATABASE "${name}"` : "CREATE DATABASE"}) or correct the database name${fix}`,
      )
    }
    case "57P03":
      return say("the server is starting up or shutting down", "start again in a moment")
    case "53300":
      return say(
        "too many connections",
        "raise max_connections on the server or lower the number of processes sharing it",
      )
    case "42501":
      return say(
        found.message ?? "permission denied",
        "grant the user rights to create tables in the database (it owns the schema the migrations create)",
      )
    default:
      // Other connection, authorization, operator or resource SQLSTATEs: the server's message is the cause.
      return /^(08|28|3D|57|53)[0-9A-Z]{3}$/.test(found.code) && found.message !== undefined
        ? say(
            `${found.message} (SQLSTATE ${found.code})`,
            `check the server and the user${fix}; the PostgreSQL manual lists the code under "Error Codes"`,
          )
        : undefined
  }
}

/** The database or listener failure line, when the error is one (else undefined). */
export const explainConnectionFailure = (error: unknown, context: StartContext): string | undefined => {
  const found = rootCause(error)
  return listenFailure(found, context) ?? databaseFailure(found, context)
}

/** One line saying why starting failed and what to change. */
export const explainStartFailure = (error: unknown, context: StartContext): string => {
  const found = rootCause(error)
  return (
    listenFailure(found, context) ??
    databaseFailure(found, context) ??
    `failed to start: ${describeUnknown(found?.message !== undefined ? { message: found.message } : error)}`
  )
}
