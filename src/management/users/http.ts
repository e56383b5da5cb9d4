import { Effect, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { InvalidRequest } from "../../http/errors.js"
import { decodeJsonBody, decodeParams, decodeQuery, json, refuseBodyFields, route } from "../../http/route.js"
import type { UserRow } from "../../users/repo.js"
import { environmentForCaller } from "../auth/access.js"
import { withCaller } from "../auth/service.js"
import { withEtag } from "../http/etag.js"
import { withIdempotency } from "../http/idempotency.js"
import { pageOf, parsePage } from "../http/pagination.js"
import { presentIdentity, presentPasskey, presentSession, presentUser } from "./present.js"
import {
  BlockUserBody, CreateUserBody, EnvironmentQuery, IdentityList, IdentityParams, IdentityUnlinked, ListUsersQuery, PasskeyDeleted,
  PasskeyList, PasskeyParams, SessionList, SessionParams, SessionRevoked, SessionsRevoked, SubResourceListQuery, UpdateUserBody, User,
  UserList, UserParams,
} from "./schema.js"
import * as service from "./service.js"

// Management API, Users table: every route needs query `environment_id`, checked with
// environmentForCaller (404 for an Environment the caller may not reach).

const tags = ["Users"]

const one = (row: UserRow, status = 200) => withEtag(json(presentUser(row), status), row.id, row.version)

/** The addressed Environment, from query `environment_id`. */
const environmentOf = <S extends Schema.Top & { readonly DecodingServices: never; readonly Type: { readonly environment_id: string } }>(schema: S) =>
  Effect.gen(function* () {
    const query = yield* decodeQuery(schema)
    const env = yield* environmentForCaller((query as { environment_id: string }).environment_id)
    return { env, query: query as S["Type"] }
  })

const CreateQuery = Schema.Struct({ environment_id: Schema.optionalKey(Schema.String) })

/** Fields of the user record a PATCH may not carry: each gets a 400 `invalid_request` saying why. */
const IMMUTABLE_FIELDS = {
  email: "cannot be changed (email changes go through the user's own verified email change)",
  status: "changes only through block, unblock and DELETE",
  id: "is read-only", environment_id: "is read-only", blocked_reason: "is read-only", created_at: "is read-only",
  updated_at: "is read-only", last_login_at: "is read-only", deleted_at: "is read-only",
}

export const userRoutes = [
  route("GET", "/v1/users", withCaller("users:read", Effect.gen(function* () {
    const { env, query } = yield* environmentOf(ListUsersQuery)
    const page = yield* parsePage(query)
    const rows = yield* service.listUsers(env, { status: query.status, search: query.search }, page)
    return json(pageOf(rows, page, (r) => r.id, presentUser))
  })), { summary: "List users (optional status; search: email prefix or name substring)", tags, scope: "users:read", query: ListUsersQuery, response: UserList }),

  route("POST", "/v1/users", withCaller("users:write", withIdempotency(Effect.gen(function* () {
    const query = yield* decodeQuery(CreateQuery)
    const body = yield* decodeJsonBody(CreateUserBody)
    if (query.environment_id !== undefined && body.environment_id !== undefined && query.environment_id !== body.environment_id) {
      return yield* new InvalidRequest({ detail: "environment_id of the query and of the body differ" })
    }
    const environmentId = body.environment_id ?? query.environment_id
    if (environmentId === undefined) return yield* new InvalidRequest({ detail: "environment_id is required" })
    const env = yield* environmentForCaller(environmentId)
    const row = yield* service.createUser(env, body)
    return HttpServerResponse.setHeader(one(row, 201), "location", `/v1/users/${row.id}?environment_id=${env.id}`)
  }))), { summary: "Create a user", tags, scope: "users:write", query: CreateQuery, body: CreateUserBody, response: User, status: 201, idempotent: true }),

  route("GET", "/v1/users/:userId", withCaller("users:read", Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId } = yield* decodeParams(UserParams)
    return one(yield* service.getUser(env, userId))
  })), { summary: "Get a user (ETag)", tags, scope: "users:read", params: UserParams, query: EnvironmentQuery, response: User }),

  route("PATCH", "/v1/users/:userId", withCaller("users:write", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId } = yield* decodeParams(UserParams)
    yield* refuseBodyFields(IMMUTABLE_FIELDS)
    const body = yield* decodeJsonBody(UpdateUserBody)
    if (Object.keys(body).length === 0) return yield* new InvalidRequest({ detail: "Send at least one field to change" })
    return one(yield* service.updateUser(env, userId, body))
  }))), {
    summary: "Update a user's profile and metadata (If-Match; email cannot change)", tags, scope: "users:write",
    params: UserParams, query: EnvironmentQuery, body: UpdateUserBody, response: User, idempotent: true,
  }),

  route("DELETE", "/v1/users/:userId", withCaller("users:delete", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId } = yield* decodeParams(UserParams)
    return one(yield* service.deleteUser(env, userId))
  }))), {
    summary: "Delete a user: moves it to pending_deletion (If-Match)", tags, scope: "users:delete",
    params: UserParams, query: EnvironmentQuery, response: User, idempotent: true,
  }),

  route("POST", "/v1/users/:userId/block", withCaller("users:block", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId } = yield* decodeParams(UserParams)
    const body = yield* decodeJsonBody(BlockUserBody, { emptyAs: {} })
    return one(yield* service.blockUser(env, userId, body.reason))
  }))), {
    summary: "Block a user (revokes its sessions; its access tokens become inactive)", tags, scope: "users:block",
    params: UserParams, query: EnvironmentQuery, body: BlockUserBody, response: User, idempotent: true,
  }),

  route("POST", "/v1/users/:userId/unblock", withCaller("users:block", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId } = yield* decodeParams(UserParams)
    return one(yield* service.unblockUser(env, userId))
  }))), { summary: "Unblock a user", tags, scope: "users:block", params: UserParams, query: EnvironmentQuery, response: User, idempotent: true }),

  route("GET", "/v1/users/:userId/identities", withCaller("user_identities:read", Effect.gen(function* () {
    const { env, query } = yield* environmentOf(SubResourceListQuery)
    const { userId } = yield* decodeParams(UserParams)
    const page = yield* parsePage(query)
    return json(pageOf(yield* service.listIdentities(env, userId, page), page, (r) => r.id, presentIdentity))
  })), { summary: "List a user's linked identities", tags, scope: "user_identities:read", params: UserParams, query: SubResourceListQuery, response: IdentityList }),

  route("DELETE", "/v1/users/:userId/identities/:identityId", withCaller("user_identities:write", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId, identityId } = yield* decodeParams(IdentityParams)
    const identity = yield* service.unlinkIdentity(env, userId, identityId)
    return json({ identity_id: identity.id, user_id: userId, unlinked: true })
  }))), {
    summary: "Unlink a user's identity", tags, scope: "user_identities:write",
    params: IdentityParams, query: EnvironmentQuery, response: IdentityUnlinked, idempotent: true,
  }),

  route("GET", "/v1/users/:userId/passkeys", withCaller("user_passkeys:read", Effect.gen(function* () {
    const { env, query } = yield* environmentOf(SubResourceListQuery)
    const { userId } = yield* decodeParams(UserParams)
    const page = yield* parsePage(query)
    return json(pageOf(yield* service.listPasskeys(env, userId, page), page, (r) => r.id, presentPasskey))
  })), { summary: "List a user's passkeys (never credential ids, keys or counters)", tags, scope: "user_passkeys:read", params: UserParams, query: SubResourceListQuery, response: PasskeyList }),

  route("DELETE", "/v1/users/:userId/passkeys/:passkeyId", withCaller("user_passkeys:write", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId, passkeyId } = yield* decodeParams(PasskeyParams)
    const passkey = yield* service.deletePasskey(env, userId, passkeyId)
    return json({ passkey_id: passkey.id, user_id: userId, deleted: true })
  }))), {
    summary: "Delete a user's passkey", tags, scope: "user_passkeys:write",
    params: PasskeyParams, query: EnvironmentQuery, response: PasskeyDeleted, idempotent: true,
  }),

  route("GET", "/v1/users/:userId/sessions", withCaller("user_sessions:read", Effect.gen(function* () {
    const { env, query } = yield* environmentOf(SubResourceListQuery)
    const { userId } = yield* decodeParams(UserParams)
    const page = yield* parsePage(query)
    return json(pageOf(yield* service.listSessions(env, userId, page), page, (r) => r.id, presentSession))
  })), { summary: "List a user's live sessions", tags, scope: "user_sessions:read", params: UserParams, query: SubResourceListQuery, response: SessionList }),

  route("DELETE", "/v1/users/:userId/sessions/:sessionId", withCaller("user_sessions:write", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId, sessionId } = yield* decodeParams(SessionParams)
    const session = yield* service.revokeSession(env, userId, sessionId)
    return json({ session_id: session.id, user_id: userId, revoked: true })
  }))), {
    summary: "Revoke one of a user's sessions", tags, scope: "user_sessions:write",
    params: SessionParams, query: EnvironmentQuery, response: SessionRevoked, idempotent: true,
  }),

  route("DELETE", "/v1/users/:userId/sessions", withCaller("user_sessions:write", withIdempotency(Effect.gen(function* () {
    const { env } = yield* environmentOf(EnvironmentQuery)
    const { userId } = yield* decodeParams(UserParams)
    const revoked = yield* service.revokeAllSessions(env, userId)
    return json({ user_id: userId, revoked: true, revoked_count: revoked.length })
  }))), {
    summary: "Revoke all of a user's sessions", tags, scope: "user_sessions:write",
    params: UserParams, query: EnvironmentQuery, response: SessionsRevoked, idempotent: true,
  }),
]
