import { Effect } from "effect"
import { decodeJsonBody, decodeParams, json, route } from "../../http/route.js"
import { TransactionParams } from "../transactions/schema.js"
import { ChallengeInfo, ResendBody, StartBody, Verified, VerifyBody } from "./schema.js"
import { resendEmailOtp, startEmailOtp, verifyEmailOtp } from "./service.js"

const tags = ["Email OTP"]

const challengeInfo = (row: { id: string; expires_at: Date }) => ({
  challenge_id: row.id,
  expires_at: row.expires_at.toISOString(),
})

export const emailOtpRoutes = [
  route(
    "POST",
    "/auth/transactions/:transactionId/email/start",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(StartBody)
      return json(challengeInfo(yield* startEmailOtp(transactionId, body.email)), 202)
    }),
    {
      summary: "Send a one-time code to an email address",
      tags,
      params: TransactionParams,
      body: StartBody,
      response: ChallengeInfo,
      status: 202,
    },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/email/resend",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(ResendBody)
      return json(challengeInfo(yield* resendEmailOtp(transactionId, body.challenge_id)), 202)
    }),
    {
      summary: "Send a new code (at least 30 s after the previous one)",
      tags,
      params: TransactionParams,
      body: ResendBody,
      response: ChallengeInfo,
      status: 202,
    },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/email/verify",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(VerifyBody)
      return json(yield* verifyEmailOtp(transactionId, body.challenge_id, body.code))
    }),
    {
      summary: "Verify the code: the transaction becomes authenticated",
      tags,
      params: TransactionParams,
      body: VerifyBody,
      response: Verified,
    },
  ),
]
