import { Effect } from "effect"
import { decodeJsonBody, json, refuseBodyFields, route } from "../../http/route.js"
import { withMe } from "../auth.js"
import { presentProfile } from "./present.js"
import { DeletionRequested, Profile, UpdateProfileBody } from "./schema.js"
import { deleteMe, getProfile, updateProfile } from "./service.js"

const tags = ["Self-service"]

/** Spec: Self-service /me, GET / PATCH / DELETE /me (paths without `/v1`). */
export const meProfileRoutes = [
  route("GET", "/me", withMe(Effect.map(getProfile, (user) => json(presentProfile(user)))), {
    summary: "My profile",
    tags,
    response: Profile,
  }),
  route(
    "PATCH",
    "/me",
    withMe(
      Effect.gen(function* () {
        // Spec: "email cannot be changed here": a clear 400 naming the routes that change it.
        yield* refuseBodyFields({ email: "cannot be changed here; use POST /me/email/change/start" })
        const body = yield* decodeJsonBody(UpdateProfileBody)
        return json(presentProfile(yield* updateProfile(body)))
      }),
    ),
    {
      summary: "Update my profile (name, avatar_url, locale, timezone; null clears)",
      tags,
      body: UpdateProfileBody,
      response: Profile,
    },
  ),
  route(
    "DELETE",
    "/me",
    withMe(
      Effect.gen(function* () {
        const user = yield* deleteMe
        return json({ user_id: user.id, status: "pending_deletion" })
      }),
    ),
    { summary: "Delete my account (fresh session; moves it to pending_deletion)", tags, response: DeletionRequested },
  ),
]
