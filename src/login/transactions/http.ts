import { Effect } from "effect"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { InvalidRequest } from "../../http/errors.js"
import { decodeJsonBody, decodeParams, json, route } from "../../http/route.js"
import { loginClient } from "../clients.js"
import { assertOriginAllowedForClient } from "../../http/cors/client-origins.js"
import { availableMethods } from "../methods.js"
import {
  checkAgainstClient,
  checkPkce,
  checkStateLike,
  CLIENT_RULE_MESSAGES,
  parseResources,
  parseScope,
} from "../rules.js"
import {
  CompleteBody,
  CompletedTransaction,
  CreatedTransaction,
  CreateTransactionBody,
  TransactionParams,
  TransactionView,
} from "./schema.js"
import {
  cancelTransaction,
  completeTransaction,
  createTransaction,
  limitTransactionCreation,
  loadTransactionForUse,
  presentTransaction,
} from "./service.js"

const tags = ["Login transactions"]

/** Spec: Login transactions, Create body; each rule in ../rules.ts. */
const create = Effect.gen(function* () {
  const body = yield* decodeJsonBody(CreateTransactionBody)
  const env = yield* CurrentEnvironment
  const responseMode = body.response_mode ?? "redirect"
  if (responseMode !== "redirect" && responseMode !== "native_return") {
    return yield* new InvalidRequest({ detail: "response_mode must be redirect or native_return" })
  }
  const syntax =
    checkPkce(body.code_challenge, body.code_challenge_method) ??
    checkStateLike("state", body.state) ??
    (body.nonce === undefined ? undefined : checkStateLike("nonce", body.nonce))
  if (syntax !== undefined) return yield* new InvalidRequest({ detail: syntax })
  const scope = parseScope(body.scope)
  if ("failure" in scope) return yield* new InvalidRequest({ detail: scope.failure })
  const resources = parseResources(body.resource ?? [])
  if ("failure" in resources) return yield* new InvalidRequest({ detail: resources.failure })

  const client = yield* loginClient(env.record.id, body.client_id)
  if (client) {
    yield* assertOriginAllowedForClient(client)
    yield* limitTransactionCreation(client.id)
  }
  const failure = checkAgainstClient(client, {
    redirectUri: body.redirect_uri,
    scopes: scope.scopes,
    resources: resources.resources,
    nonce: body.nonce,
  })
  if (failure !== undefined || !client)
    return yield* new InvalidRequest({ detail: CLIENT_RULE_MESSAGES[failure ?? "unknown_client"] })

  const { row } = yield* createTransaction({
    client,
    redirectUri: body.redirect_uri,
    codeChallenge: body.code_challenge,
    state: body.state,
    nonce: body.nonce,
    scopes: scope.scopes,
    resources: resources.resources,
    responseMode,
    source: "api",
  })
  return json(
    {
      transaction_id: row.id,
      expires_at: row.expires_at.toISOString(),
      available_methods: yield* availableMethods(env.record.id),
    },
    201,
  )
})

export const transactionRoutes = [
  route("POST", "/auth/transactions", create, {
    summary: "Create a login transaction",
    tags,
    body: CreateTransactionBody,
    response: CreatedTransaction,
    status: 201,
  }),
  route(
    "GET",
    "/auth/transactions/:transactionId",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const row = yield* loadTransactionForUse(transactionId)
      return json(presentTransaction(row, yield* availableMethods(row.environment_id)))
    }),
    { summary: "Get a login transaction", tags, params: TransactionParams, response: TransactionView },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/cancel",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const row = yield* cancelTransaction(transactionId)
      return json(presentTransaction(row, yield* availableMethods(row.environment_id)))
    }),
    {
      summary: "Cancel a login transaction (it cannot be resumed)",
      tags,
      params: TransactionParams,
      response: TransactionView,
    },
  ),
  route(
    "POST",
    "/auth/transactions/:transactionId/complete",
    Effect.gen(function* () {
      const { transactionId } = yield* decodeParams(TransactionParams)
      const body = yield* decodeJsonBody(CompleteBody, { emptyAs: {} })
      const { code, row } = yield* completeTransaction(transactionId, body.social_proof)
      const env = yield* CurrentEnvironment
      return json({
        transaction_id: row.id,
        authorization_code: code,
        state: row.state,
        redirect_uri: row.redirect_uri,
        iss: env.urls.issuer,
      })
    }),
    {
      summary:
        "Complete an authenticated transaction: one-time authorization code, state and the issuer (RFC 9207 iss). A custom-UI social login sends the social_proof its redirect URI received",
      tags,
      params: TransactionParams,
      body: CompleteBody,
      response: CompletedTransaction,
    },
  ),
]
