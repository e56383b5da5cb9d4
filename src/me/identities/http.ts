import { Effect, Schema } from "effect"
import { decodeParams, decodeQuery, json, route } from "../../http/route.js"
import { PageQuery, pageOf, parsePage } from "../../management/conventions/pagination.js"
import { presentIdentity } from "../../management/users/present.js"
import { Identity } from "../../management/users/schema.js"
import { withMe } from "../auth.js"
import { listMyIdentities, unlinkMyIdentity } from "./service.js"

const tags = ["Self-service"]

const IdentityParams = Schema.Struct({ identityId: Schema.String })
const ListQuery = Schema.Struct(PageQuery)
const IdentityList = Schema.Struct({ data: Schema.Array(Identity), next_cursor: Schema.NullOr(Schema.String) })
const IdentityUnlinked = Schema.Struct({ identity_id: Schema.String, unlinked: Schema.Literal(true) })

/**
 * Spec: Self-service /me, `GET /me/identities` and `DELETE /me/identities/{identityId}`. The
 * linking route (`POST /me/identities/{provider}/link`) belongs to social login.
 */
export const meIdentityRoutes = [
  route(
    "GET",
    "/me/identities",
    withMe(
      Effect.gen(function* () {
        const page = yield* parsePage(yield* decodeQuery(ListQuery))
        return json(pageOf(yield* listMyIdentities(page), page, (r) => r.id, presentIdentity))
      }),
    ),
    {
      summary: "List my linked identities (link time linked_at, last use last_used_at)",
      tags,
      query: ListQuery,
      response: IdentityList,
    },
  ),
  route(
    "DELETE",
    "/me/identities/:identityId",
    withMe(
      Effect.gen(function* () {
        const { identityId } = yield* decodeParams(IdentityParams)
        const identity = yield* unlinkMyIdentity(identityId)
        return json({ identity_id: identity.id, unlinked: true })
      }),
    ),
    {
      summary: "Unlink one of my identities (never the last authentication method)",
      tags,
      params: IdentityParams,
      response: IdentityUnlinked,
    },
  ),
]
