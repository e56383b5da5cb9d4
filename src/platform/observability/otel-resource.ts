import { ConfigInvalid } from "../config-invalid.js"

export const DEFAULT_SERVICE_NAME = "authservice"

/**
 * The resource attributes of the OTel SDK environment: OTEL_RESOURCE_ATTRIBUTES
 * (`key=value` pairs separated by commas, values percent-encoded: the OpenTelemetry
 * specification's format) with `service.name` from OTEL_SERVICE_NAME when set (it wins, as
 * in every SDK), else from those attributes, else `authservice`. Read from the parsed
 * configuration rather than by the SDK's own env detector, which reads process.env only
 * (a process started with another environment, as the tests do, would lose them).
 */
export const otelResourceAttributes = (
  env: Readonly<Record<string, string | undefined>>,
): Readonly<Record<string, string>> => {
  const attributes: Record<string, string> = {}
  for (const pair of (env["OTEL_RESOURCE_ATTRIBUTES"] ?? "").split(",")) {
    if (pair.trim() === "") continue
    const at = pair.indexOf("=")
    const key = at < 1 ? "" : pair.slice(0, at).trim()
    let value: string | undefined
    try {
      value = at < 1 ? undefined : decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      value = undefined
    }
    if (key === "" || value === undefined)
      throw new ConfigInvalid({
        message: `OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas, values percent-encoded (got "${pair.trim()}")`,
      })
    attributes[key] = value
  }
  attributes["service.name"] = env["OTEL_SERVICE_NAME"] || attributes["service.name"] || DEFAULT_SERVICE_NAME
  return attributes
}
