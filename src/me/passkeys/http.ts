import { Effect, Schema } from "effect"
import { decodeJsonBody, decodeParams, decodeQuery, json, route } from "../../http/route.js"
import { PageQuery, pageOf, parsePage } from "../../management/conventions/pagination.js"
import { presentPasskey } from "../../passkeys/present.js"
import {
  CreationOptions,
  PasskeySummary,
  RegistrationOptionsBody,
  RegistrationVerifyBody,
} from "../../passkeys/schema.js"
import { withMe } from "../auth.js"
import { deleteMyPasskey, listMyPasskeys, myRegistrationOptions, myRegistrationVerify } from "./service.js"
import { limitWrite } from "../../rate-limit/write-limits.js"
import { unavailableOnSqlError } from "../unavailable.js"

const tags = ["Self-service"]

const PasskeyParams = Schema.Struct({ passkeyId: Schema.String })
const ListQuery = Schema.Struct(PageQuery)
const PasskeyList = Schema.Struct({ data: Schema.Array(PasskeySummary), next_cursor: Schema.NullOr(Schema.String) })
const PasskeyDeleted = Schema.Struct({ passkey_id: Schema.String, deleted: Schema.Literal(true) })

/** Spec: Self-service /me, the passkey routes (paths without `/v1`). */
export const mePasskeyRoutes = [
  route(
    "GET",
    "/me/passkeys",
    withMe(
      Effect.gen(function* () {
        const page = yield* parsePage(yield* decodeQuery(ListQuery))
        return json(pageOf(yield* listMyPasskeys(page), page, (r) => r.id, presentPasskey))
      }),
    ),
    {
      summary: "List my passkeys (never credential ids, public keys or sign counts)",
      tags,
      query: ListQuery,
      response: PasskeyList,
    },
  ),
  route(
    "POST",
    "/me/passkeys/registration/options",
    withMe(
      Effect.gen(function* () {
        yield* unavailableOnSqlError(limitWrite("passkeyOptions"))
        const body = yield* decodeJsonBody(RegistrationOptionsBody, { emptyAs: {} })
        return json(yield* myRegistrationOptions(body))
      }),
    ),
    {
      summary: "WebAuthn creation options for a new passkey (fresh session)",
      tags,
      body: RegistrationOptionsBody,
      response: CreationOptions,
    },
  ),
  route(
    "POST",
    "/me/passkeys/registration/verify",
    withMe(
      Effect.gen(function* () {
        const body = yield* decodeJsonBody(RegistrationVerifyBody)
        return json(presentPasskey(yield* myRegistrationVerify(body)))
      }),
    ),
    {
      summary: "Verify the attestation and register the passkey (fresh session)",
      tags,
      body: RegistrationVerifyBody,
      response: PasskeySummary,
    },
  ),
  route(
    "DELETE",
    "/me/passkeys/:passkeyId",
    withMe(
      Effect.gen(function* () {
        const { passkeyId } = yield* decodeParams(PasskeyParams)
        const deleted = yield* deleteMyPasskey(passkeyId)
        return json({ passkey_id: deleted.id, deleted: true })
      }),
    ),
    {
      summary: "Delete one of my passkeys (never the last authentication method)",
      tags,
      params: PasskeyParams,
      response: PasskeyDeleted,
    },
  ),
]
