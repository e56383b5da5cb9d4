import { Effect } from "effect"
import { decodeJsonBody, decodeParams, json, route } from "../http/route.js"
import { limitWrite } from "../rate-limit/write-limits.js"
import { withMe } from "../me/auth.js"
import { handleCallback } from "./callback.js"
import { startLink } from "./link.js"
import { confirmLink } from "./link-confirm.js"
import { startSocialLogin } from "./login.js"
import { browserRedirect } from "./urls.js"
import { parseProvider } from "./redirect.js"
import {
  AuthorizationUrl,
  CallbackParameters,
  LinkBody,
  LinkConfirmBody,
  LinkConfirmed,
  ProviderParams,
  SocialStartParams,
} from "./schema.js"

const tags = ["Social login"]

const callback = Effect.gen(function* () {
  const { provider } = yield* decodeParams(ProviderParams)
  return browserRedirect(yield* handleCallback(yield* parseProvider(provider)))
})

/** Spec: Social login (paths without `/v1`). */
export const socialLoginRoutes = [
  route(
    "POST",
    "/auth/transactions/:transactionId/social/:provider/start",
    Effect.gen(function* () {
      yield* limitWrite("socialStart")
      const { transactionId, provider } = yield* decodeParams(SocialStartParams)
      return json(yield* startSocialLogin(transactionId, yield* parseProvider(provider)))
    }),
    {
      summary: "Start social login: the provider's authorization URL (open it in the system browser)",
      tags,
      params: SocialStartParams,
      response: AuthorizationUrl,
    },
  ),
  route("GET", "/auth/social/:provider/callback", callback, {
    summary: "Provider callback (query); redirects the browser",
    tags,
    params: ProviderParams,
    query: CallbackParameters,
    status: 302,
  }),
  route("POST", "/auth/social/:provider/callback", callback, {
    summary: "Provider callback (form post, e.g. Apple, or JSON); redirects the browser",
    tags,
    params: ProviderParams,
    body: CallbackParameters,
    status: 302,
  }),
]

/** Spec: Self-service /me, `POST /me/identities/{provider}/link`, and its confirm (docs/decisions/social-login.md). */
export const meLinkRoutes = [
  route(
    "POST",
    "/me/identities/:provider/link",
    withMe(
      Effect.gen(function* () {
        const { provider } = yield* decodeParams(ProviderParams)
        const parsed = yield* parseProvider(provider)
        const body = yield* decodeJsonBody(LinkBody)
        return json(yield* startLink(parsed, body.redirect_uri))
      }),
    ),
    {
      summary: "Link a social identity (fresh session): the provider's authorization URL",
      tags: ["Self-service"],
      params: ProviderParams,
      body: LinkBody,
      response: AuthorizationUrl,
    },
  ),
  route(
    "POST",
    "/me/identities/:provider/link/confirm",
    withMe(
      Effect.gen(function* () {
        const { provider } = yield* decodeParams(ProviderParams)
        const parsed = yield* parseProvider(provider)
        const body = yield* decodeJsonBody(LinkConfirmBody)
        return json(yield* confirmLink(parsed, body.link_code))
      }),
    ),
    {
      summary:
        "Confirm a social identity link with the link_code the provider's return delivered to the redirect URI (same user, client and session that started it)",
      tags: ["Self-service"],
      params: ProviderParams,
      body: LinkConfirmBody,
      response: LinkConfirmed,
    },
  ),
]
