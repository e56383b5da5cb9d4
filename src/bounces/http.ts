import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { json } from "../http/route.js"
import { endpoint } from "../management/conventions/endpoint.js"
import { BounceReceipt, GenericBounce, SnsReceipt } from "./schema.js"
import * as service from "./service.js"
import { SnsMessage } from "./sns.js"

// Bounce intake on the Management host (README "Bounces"). Not Management API keys: the
// generic form carries the install's secret, SNS messages are verified by their signature.

const tags = ["Bounces"]

export const bounceRoutes = [
  endpoint(
    {
      method: "POST",
      path: "/v1/email-bounces",
      summary:
        "Report a bounce of one of our mails (generic JSON; header X-Bounce-Secret = BOUNCE_WEBHOOK_SECRET). A hard bounce suppresses the address for Email OTP",
      tags,
      admit: Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        service.authenticateGeneric(request.headers["x-bounce-secret"]),
      ),
      body: GenericBounce,
      response: BounceReceipt,
    },
    ({ body }) => Effect.map(service.receiveGeneric(body), json),
  ),

  // SNS posts JSON as text/plain: the body is read as text whatever the media type.
  endpoint(
    {
      method: "POST",
      path: "/v1/email-bounces/sns",
      summary:
        "Amazon SES bounce notifications through Amazon SNS (signature verified; subscriptions confirmed); 404 unless BOUNCE_SNS_TOPIC_ARNS is set",
      tags,
      admit: service.requireSesIntake,
      body: SnsMessage,
      bodyAsText: { invalid: "Not an Amazon SNS message" },
      response: SnsReceipt,
    },
    ({ body }) => Effect.map(service.receiveSns(body), json),
  ),
]
