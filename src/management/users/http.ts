import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { InvalidRequest } from "../../http/errors.js"
import { json } from "../../http/route.js"
import type { UserRow } from "../../users/repo.js"
import { environmentForCaller } from "../auth/access.js"
import { endpoint } from "../conventions/endpoint.js"
import { withEtag } from "../conventions/etag.js"
import { pageOf, parsePage } from "../conventions/pagination.js"
import { presentIdentity, presentPasskey, presentSession, presentUser } from "./present.js"
import {
  BlockUserBody,
  CreateUserBody,
  EnvironmentQuery,
  IdentityList,
  IdentityParams,
  IdentityUnlinked,
  ListUsersQuery,
  PasskeyDeleted,
  PasskeyList,
  PasskeyParams,
  SessionList,
  SessionParams,
  SessionRevoked,
  SessionsRevoked,
  SubResourceListQuery,
  UpdateUserBody,
  User,
  UserList,
  UserParams,
} from "./schema.js"
import * as service from "./service.js"

// Management API, Users table: every route needs query `environment_id`, checked with
// environmentForCaller (404 for an Environment the caller may not reach).

const tags = ["Users"]

const one = (row: UserRow, status = 200) => withEtag(json(presentUser(row), status), row.id, row.version)

const CreateQuery = Schema.Struct({ environment_id: Schema.optionalKey(Schema.String) })

/** Fields of the user record a PATCH may not carry: each gets a 400 `invalid_request` saying why. */
const IMMUTABLE_FIELDS = {
  email: "cannot be changed (email changes go through the user's own verified email change)",
  status: "changes only through block, unblock and DELETE",
  id: "is read-only",
  environment_id: "is read-only",
  blocked_reason: "is read-only",
  created_at: "is read-only",
  updated_at: "is read-only",
  last_login_at: "is read-only",
  deleted_at: "is read-only",
}

const ifMatch = { resource: (p: typeof UserParams.Type) => p.userId }

export const userRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/users",
      summary: "List users (optional status; search: email prefix or name substring)",
      tags,
      scope: "users:read",
      query: ListUsersQuery,
      response: UserList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const page = yield* parsePage(query)
        const rows = yield* service.listUsers(env, { status: query.status, search: query.search }, page)
        return json(pageOf(rows, page, (r) => r.id, presentUser))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/users",
      summary: "Create a user",
      tags,
      scope: "users:write",
      query: CreateQuery,
      body: CreateUserBody,
      response: User,
      status: 201,
      idempotent: true,
    },
    ({ query, body }) =>
      Effect.gen(function* () {
        if (
          query.environment_id !== undefined &&
          body.environment_id !== undefined &&
          query.environment_id !== body.environment_id
        ) {
          return yield* new InvalidRequest({ detail: "environment_id of the query and of the body differ" })
        }
        const environmentId = body.environment_id ?? query.environment_id
        if (environmentId === undefined) return yield* new InvalidRequest({ detail: "environment_id is required" })
        const env = yield* environmentForCaller(environmentId)
        const row = yield* service.createUser(env, body)
        return HttpServerResponse.setHeader(one(row, 201), "location", `/v1/users/${row.id}?environment_id=${env.id}`)
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/users/:userId",
      summary: "Get a user (ETag)",
      tags,
      scope: "users:read",
      params: UserParams,
      query: EnvironmentQuery,
      response: User,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        return one(yield* service.getUser(env, params.userId))
      }),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/users/:userId",
      summary: "Update a user's profile and metadata (If-Match; email cannot change)",
      tags,
      scope: "users:write",
      params: UserParams,
      query: EnvironmentQuery,
      readOnly: IMMUTABLE_FIELDS,
      body: UpdateUserBody,
      response: User,
      idempotent: true,
      ifMatch,
    },
    ({ params, query, body, expectedVersion }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        if (Object.keys(body).length === 0)
          return yield* new InvalidRequest({ detail: "Send at least one field to change" })
        return one(yield* service.updateUser(env, params.userId, body, expectedVersion))
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/users/:userId",
      summary: "Delete a user: moves it to pending_deletion (If-Match)",
      tags,
      scope: "users:delete",
      params: UserParams,
      query: EnvironmentQuery,
      response: User,
      idempotent: true,
      ifMatch,
    },
    ({ params, query, expectedVersion }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        return one(yield* service.deleteUser(env, params.userId, expectedVersion))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/users/:userId/block",
      summary: "Block a user (revokes its sessions; its access tokens become inactive)",
      tags,
      scope: "users:block",
      params: UserParams,
      query: EnvironmentQuery,
      body: BlockUserBody,
      emptyBody: {},
      response: User,
      idempotent: true,
      ifMatch,
    },
    ({ params, query, body, expectedVersion }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        return one(yield* service.blockUser(env, params.userId, body.reason, expectedVersion))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/users/:userId/unblock",
      summary: "Unblock a user",
      tags,
      scope: "users:block",
      params: UserParams,
      query: EnvironmentQuery,
      response: User,
      idempotent: true,
      ifMatch,
    },
    ({ params, query, expectedVersion }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        return one(yield* service.unblockUser(env, params.userId, expectedVersion))
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/users/:userId/identities",
      summary: "List a user's linked identities",
      tags,
      scope: "user_identities:read",
      params: UserParams,
      query: SubResourceListQuery,
      response: IdentityList,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const page = yield* parsePage(query)
        return json(pageOf(yield* service.listIdentities(env, params.userId, page), page, (r) => r.id, presentIdentity))
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/users/:userId/identities/:identityId",
      summary: "Unlink a user's identity",
      tags,
      scope: "user_identities:write",
      params: IdentityParams,
      query: EnvironmentQuery,
      response: IdentityUnlinked,
      idempotent: true,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const identity = yield* service.unlinkIdentity(env, params.userId, params.identityId)
        return json({ identity_id: identity.id, user_id: params.userId, unlinked: true })
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/users/:userId/passkeys",
      summary: "List a user's passkeys (never credential ids, keys or counters)",
      tags,
      scope: "user_passkeys:read",
      params: UserParams,
      query: SubResourceListQuery,
      response: PasskeyList,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const page = yield* parsePage(query)
        return json(pageOf(yield* service.listPasskeys(env, params.userId, page), page, (r) => r.id, presentPasskey))
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/users/:userId/passkeys/:passkeyId",
      summary: "Delete a user's passkey",
      tags,
      scope: "user_passkeys:write",
      params: PasskeyParams,
      query: EnvironmentQuery,
      response: PasskeyDeleted,
      idempotent: true,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const passkey = yield* service.deletePasskey(env, params.userId, params.passkeyId)
        return json({ passkey_id: passkey.id, user_id: params.userId, deleted: true })
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/users/:userId/sessions",
      summary: "List a user's live sessions",
      tags,
      scope: "user_sessions:read",
      params: UserParams,
      query: SubResourceListQuery,
      response: SessionList,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const page = yield* parsePage(query)
        return json(pageOf(yield* service.listSessions(env, params.userId, page), page, (r) => r.id, presentSession))
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/users/:userId/sessions/:sessionId",
      summary: "Revoke one of a user's sessions",
      tags,
      scope: "user_sessions:write",
      params: SessionParams,
      query: EnvironmentQuery,
      response: SessionRevoked,
      idempotent: true,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const session = yield* service.revokeSession(env, params.userId, params.sessionId)
        return json({ session_id: session.id, user_id: params.userId, revoked: true })
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/users/:userId/sessions",
      summary: "Revoke all of a user's sessions",
      tags,
      scope: "user_sessions:write",
      params: UserParams,
      query: EnvironmentQuery,
      response: SessionsRevoked,
      idempotent: true,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const revoked = yield* service.revokeAllSessions(env, params.userId)
        return json({ user_id: params.userId, revoked: true, revoked_count: revoked.length })
      }),
  ),
]
