import type { HttpServerResponse } from "effect/http"

/**
 * A failure at an endpoint a person's browser visits (the authorization endpoint), handed to
 * the page that answers it instead of a JSON body. The status and Retry-After are those the
 * endpoint's JSON answer would carry; `code` names the failure to the developer (the OAuth
 * error code, or the Problem Details code where the spec has no OAuth one).
 */
export interface BrowserFailure {
  readonly status: number
  readonly code: string
  /** What the refusal says, when it is ours to say (never a driver's message). */
  readonly detail: string | undefined
  readonly retryAfterSeconds: number | undefined
}

/** The pages of such endpoints, by issuer path (under `/e/{environment_id}`). */
export interface BrowserFailurePages {
  readonly paths: ReadonlySet<string>
  readonly render: (failure: BrowserFailure) => HttpServerResponse.HttpServerResponse
}
