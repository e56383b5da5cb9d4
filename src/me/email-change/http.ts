import { Effect } from "effect"
import { decodeJsonBody, json, route } from "../../http/route.js"
import { withMe } from "../auth.js"
import { EmailChangeChallenge, EmailChanged, StartEmailChangeBody, VerifyEmailChangeBody } from "./schema.js"
import { startEmailChange, verifyNewEmail, verifyOldEmail } from "./service.js"

const tags = ["Self-service"]

/** Spec: Self-service /me, the email change rows (paths without `/v1`). No resend route (rule 3). */
export const meEmailChangeRoutes = [
  route(
    "POST",
    "/me/email/change/start",
    withMe(
      Effect.gen(function* () {
        const body = yield* decodeJsonBody(StartEmailChangeBody)
        return json(yield* startEmailChange(body.new_email), 202, { "cache-control": "no-store" })
      }),
    ),
    {
      summary: "Start an email change: a code goes to the current address",
      tags,
      body: StartEmailChangeBody,
      response: EmailChangeChallenge,
      status: 202,
    },
  ),
  route(
    "POST",
    "/me/email/change/verify-old",
    withMe(
      Effect.gen(function* () {
        const body = yield* decodeJsonBody(VerifyEmailChangeBody)
        return json(yield* verifyOldEmail(body.challenge_id, body.code), 202, { "cache-control": "no-store" })
      }),
    ),
    {
      summary: "Prove the current address: a code goes to the new address",
      tags,
      body: VerifyEmailChangeBody,
      response: EmailChangeChallenge,
      status: 202,
    },
  ),
  route(
    "POST",
    "/me/email/change/verify-new",
    withMe(
      Effect.gen(function* () {
        const body = yield* decodeJsonBody(VerifyEmailChangeBody)
        return json(yield* verifyNewEmail(body.challenge_id, body.code), 200, { "cache-control": "no-store" })
      }),
    ),
    {
      summary: "Prove the new address and switch (earlier access tokens become inactive)",
      tags,
      body: VerifyEmailChangeBody,
      response: EmailChanged,
    },
  ),
]
