import { Effect, Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { InvalidRequestBody } from "../http/errors.js"
import { bodyText, decodeJsonBody, json, route } from "../http/route.js"
import { BounceReceipt, GenericBounce, SnsReceipt } from "./schema.js"
import * as service from "./service.js"
import { SnsMessage } from "./sns.js"

// Bounce intake on the Management host (README "Bounces"). Not Management API keys: the
// generic form carries the install's secret, SNS messages are verified by their signature.

const tags = ["Bounces"]
const decodeSns = Schema.decodeUnknownEffect(Schema.fromJsonString(SnsMessage))

export const bounceRoutes = [
  route("POST", "/v1/email-bounces", Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* service.authenticateGeneric(request.headers["x-bounce-secret"])
    const body = yield* decodeJsonBody(GenericBounce)
    return json(yield* service.receiveGeneric(body))
  }), {
    summary: "Report a bounce of one of our mails (generic JSON; header X-Bounce-Secret = BOUNCE_WEBHOOK_SECRET). A hard bounce suppresses the address for Email OTP",
    tags, body: GenericBounce, response: BounceReceipt,
  }),

  // SNS posts JSON as text/plain: the body is read as text whatever the media type.
  route("POST", "/v1/email-bounces/sns", Effect.gen(function* () {
    yield* service.requireSesIntake
    const text = yield* bodyText
    const message = yield* decodeSns(text).pipe(
      Effect.mapError(() => new InvalidRequestBody({ detail: "Not an Amazon SNS message" })))
    return json(yield* service.receiveSns(message))
  }), {
    summary: "Amazon SES bounce notifications through Amazon SNS (signature verified; subscriptions confirmed); 404 unless BOUNCE_SNS_TOPIC_ARNS is set",
    tags, body: SnsMessage, response: SnsReceipt,
  }),
]
