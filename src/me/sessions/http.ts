import { Effect, Schema } from "effect"
import { decodeParams, decodeQuery, json, route } from "../../http/route.js"
import { PageQuery, pageOf, parsePage } from "../../management/conventions/pagination.js"
import { presentSession } from "../../management/users/present.js"
import { Session } from "../../management/users/schema.js"
import { CurrentMe, withMe } from "../auth.js"
import { listMySessions, revokeAllMySessions, revokeMySession } from "./service.js"

const tags = ["Self-service"]

const SessionParams = Schema.Struct({ sessionId: Schema.String })
const ListQuery = Schema.Struct(PageQuery)
/** The Management session summary plus `current`: whether it is the session of the calling token (`sid`). */
const MySession = Schema.Struct({ ...Session.fields, current: Schema.Boolean })
const SessionList = Schema.Struct({ data: Schema.Array(MySession), next_cursor: Schema.NullOr(Schema.String) })
const SessionRevoked = Schema.Struct({ session_id: Schema.String, revoked: Schema.Literal(true) })
const SessionsRevoked = Schema.Struct({ revoked: Schema.Literal(true) })

/** Spec: Self-service /me, the session routes (paths without `/v1`). */
export const meSessionRoutes = [
  route(
    "GET",
    "/me/sessions",
    withMe(
      Effect.gen(function* () {
        const me = yield* CurrentMe
        const page = yield* parsePage(yield* decodeQuery(ListQuery))
        return json(
          pageOf(
            yield* listMySessions(page),
            page,
            (r) => r.id,
            (row) => ({ ...presentSession(row), current: row.id === me.sessionId }),
          ),
        )
      }),
    ),
    {
      summary: "List my live sessions (current marks the calling token's session)",
      tags,
      query: ListQuery,
      response: SessionList,
    },
  ),
  route(
    "DELETE",
    "/me/sessions/:sessionId",
    withMe(
      Effect.gen(function* () {
        const { sessionId } = yield* decodeParams(SessionParams)
        const session = yield* revokeMySession(sessionId)
        return json({ session_id: session.id, revoked: true })
      }),
    ),
    {
      summary: "Revoke one of my sessions (and its refresh tokens)",
      tags,
      params: SessionParams,
      response: SessionRevoked,
    },
  ),
  route(
    "DELETE",
    "/me/sessions",
    withMe(
      Effect.gen(function* () {
        yield* revokeAllMySessions
        return json({ revoked: true })
      }),
    ),
    { summary: "Revoke all my sessions, the current one included", tags, response: SessionsRevoked },
  ),
]
