import { Effect, Schema } from "effect"
import { decodeJsonBody, decodeParams, json, route } from "../http/route.js"
import { limitWrite } from "../rate-limit/write-limits.js"
import { TransactionParams } from "../login/transactions/schema.js"
import { presentPasskey } from "./present.js"
import {
  AuthenticationOptionsBody,
  AuthenticationVerifyBody,
  CreationOptions,
  PasskeySummary,
  RequestOptions,
  TransactionRegistrationOptionsBody,
  TransactionRegistrationVerifyBody,
} from "./schema.js"
import {
  transactionAuthenticationOptions,
  transactionAuthenticationVerify,
  transactionRegistrationOptions,
  transactionRegistrationVerify,
} from "./transaction.js"

const tags = ["Passkeys"]

/** Registration verify: the registered passkey summary plus the transaction's (unchanged) status. */
const RegisteredOnTransaction = Schema.Struct({
  ...PasskeySummary.fields,
  transaction_id: Schema.String,
  status: Schema.String,
})
const Authenticated = Schema.Struct({ transaction_id: Schema.String, status: Schema.Literal("authenticated") })

/** Spec: Passkey (WebAuthn), the four routes of a login transaction (paths without `/v1`). */
export const transactionPasskeyRoutes = [
  route(
    "POST",
    "/auth/transactions/:transactionId/passkeys/registration/options",
    Effect.gen(function* () {
      yield* limitWrite("passkeyOptions")
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(TransactionRegistrationOptionsBody, { emptyAs: {} })
      return json(yield* transactionRegistrationOptions(transactionId, body))
    }),
    {
      summary:
        "WebAuthn creation options for the transaction's (freshly authenticated) user; a custom-UI social login sends its social_proof",
      tags,
      params: TransactionParams,
      body: TransactionRegistrationOptionsBody,
      response: CreationOptions,
    },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/passkeys/registration/verify",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(TransactionRegistrationVerifyBody)
      const { passkey, transaction } = yield* transactionRegistrationVerify(transactionId, body)
      return json({ ...presentPasskey(passkey), transaction_id: transaction.id, status: transaction.status })
    }),
    {
      summary: "Verify the attestation and register the passkey (the transaction's status does not change)",
      tags,
      params: TransactionParams,
      body: TransactionRegistrationVerifyBody,
      response: RegisteredOnTransaction,
    },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/passkeys/authentication/options",
    Effect.gen(function* () {
      yield* limitWrite("passkeyOptions")
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(AuthenticationOptionsBody, { emptyAs: {} })
      return json(yield* transactionAuthenticationOptions(transactionId, body))
    }),
    {
      summary: "WebAuthn request options (discoverable credentials); the transaction becomes challenge_issued",
      tags,
      params: TransactionParams,
      body: AuthenticationOptionsBody,
      response: RequestOptions,
    },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/passkeys/authentication/verify",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(AuthenticationVerifyBody)
      return json(yield* transactionAuthenticationVerify(transactionId, body.credential))
    }),
    {
      summary: "Verify the assertion: the transaction becomes authenticated",
      tags,
      params: TransactionParams,
      body: AuthenticationVerifyBody,
      response: Authenticated,
    },
  ),
]
