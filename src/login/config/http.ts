import { Effect, Schema } from "effect"
import { decodeQuery, json, route } from "../../http/route.js"
import { loginConfig } from "./service.js"

const ConfigQuery = Schema.Struct({ client_id: Schema.String })

export const LoginConfig = Schema.Struct({
  issuer: Schema.String,
  rp_id: Schema.String,
  available_methods: Schema.Array(Schema.String),
  theme: Schema.Record(Schema.String, Schema.Unknown),
  sdk_compatibility_version: Schema.String,
  legal: Schema.Struct({ terms_url: Schema.NullOr(Schema.String), privacy_url: Schema.NullOr(Schema.String) }),
})

export const configRoutes = [
  route(
    "GET",
    "/config",
    Effect.gen(function* () {
      const { client_id } = yield* decodeQuery(ConfigQuery)
      return json(yield* loginConfig(client_id))
    }),
    { summary: "Login configuration for a client", tags: ["Configuration"], query: ConfigQuery, response: LoginConfig },
  ),
]
