// The console's one way to the server: the Management API (/v1) and the console backend
// (/console/api, /console/auth), same origin, authenticated by the HttpOnly dashboard_session
// cookie. Problem Details become ApiProblem; writes carry an Idempotency-Key that is reused when
// the same action is retried, and updates send If-Match with the ETag they read.

export interface Problem {
  readonly type?: string
  readonly title?: string
  readonly status: number
  readonly code?: string
  readonly detail?: string
  readonly request_id?: string
}

export class ApiProblem extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.title ?? `HTTP ${problem.status}`)
  }
  get status() {
    return this.problem.status
  }
  /**
   * The form field a problem concerns: the API names it first in `detail` ("redirect_uris[0] must
   * use https ...", "name must be ...") or in a `field`-like prefix; undefined for the whole form.
   */
  fieldOf(fields: ReadonlyArray<string>): string | undefined {
    const detail = this.problem.detail ?? ""
    return fields.find(
      (f) => new RegExp(`^${f}(\\[\\d+\\])?\\b`).test(detail) || detail.includes(`"${f}"`) || detail.includes(`.${f} `),
    )
  }
}

let workspaceId: string | undefined
/** The Workspace every Management call is made in (X-Workspace-Id). */
export const selectWorkspace = (id: string | undefined) => {
  workspaceId = id
}

export interface Answer<T> {
  readonly status: number
  readonly body: T
  readonly etag: string | undefined
}

const newIdempotencyKey = () => crypto.randomUUID()

export interface CallOptions {
  readonly method?: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  readonly body?: unknown
  /** The ETag read before an update: a 412 means someone changed it meanwhile. */
  readonly ifMatch?: string | undefined
  /** The same key for every retry of one action (Idempotency-Key); a new action gets a new key. */
  readonly idempotencyKey?: string | undefined
  readonly workspace?: string | null
}

export const call = async <T = unknown>(path: string, options: CallOptions = {}): Promise<Answer<T>> => {
  const method = options.method ?? "GET"
  const headers: Record<string, string> = { accept: "application/json" }
  const ws = options.workspace === null ? undefined : (options.workspace ?? workspaceId)
  if (ws !== undefined) headers["x-workspace-id"] = ws
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.ifMatch !== undefined) headers["if-match"] = options.ifMatch
  if (method === "POST" || method === "PATCH")
    headers["idempotency-key"] = options.idempotencyKey ?? newIdempotencyKey()
  const response = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  })
  const text = await response.text()
  const body = text === "" ? undefined : JSON.parse(text)
  if (!response.ok) throw new ApiProblem({ status: response.status, ...(body ?? {}) })
  return { status: response.status, body: body as T, etag: response.headers.get("etag") ?? undefined }
}

export interface ListPage<T> {
  readonly data: ReadonlyArray<T>
  readonly next_cursor: string | null
}

export const list = <T>(path: string, cursor?: string | null, limit = 25) => {
  const q = new URLSearchParams()
  if (cursor) q.set("cursor", cursor)
  q.set("limit", String(limit))
  return call<ListPage<T>>(`${path}${path.includes("?") ? "&" : "?"}${q}`)
}

/**
 * A file the API serves as an attachment (an export's download): fetched with the Workspace header
 * the browser would not add to a plain link, then handed to the browser as a download.
 */
export const download = async (path: string) => {
  const headers: Record<string, string> = {}
  if (workspaceId !== undefined) headers["x-workspace-id"] = workspaceId
  const response = await fetch(path, { headers, credentials: "same-origin" })
  if (!response.ok) {
    const text = await response.text()
    throw new ApiProblem({ status: response.status, ...(text === "" ? {} : JSON.parse(text)) })
  }
  const filename = /filename="([^"]+)"/.exec(response.headers.get("content-disposition") ?? "")?.[1] ?? "download"
  const url = URL.createObjectURL(await response.blob())
  const anchor = document.createElement("a")
  anchor.href = url
  anchor.download = filename
  document.body.append(anchor)
  anchor.click()
  anchor.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}
