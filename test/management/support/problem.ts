import { expect } from "vitest"
import type { TestResponse } from "../../support/http.js"

/** Asserts a Problem Details answer: status, code, media type, and the request id of body and header. */
export const expectProblem = (res: TestResponse, status: number, code: string) => {
  expect({ status: res.status, code: res.json?.code }, res.text).toEqual({ status, code })
  expect(res.headers["content-type"]).toContain("application/problem+json")
  expect(res.headers["x-request-id"]).toMatch(/^req_/)
  expect(res.json.request_id).toBe(res.headers["x-request-id"])
}
