import type { AppConfig } from "../platform/config.js"

export type HostTarget =
  | { readonly surface: "management" }
  | { readonly surface: "issuer" }
  | { readonly surface: "interaction"; readonly environmentId: string }
  | { readonly surface: "custom"; readonly hostname: string }

const splitPort = (host: string) => {
  const m = /^(.*?)(?::(\d+))?$/.exec(host)!
  return { name: m[1]!, port: m[2] }
}

/**
 * Classifies a request's Host header. Requests may arrive at 127.0.0.1 with the right
 * Host; nothing depends on DNS. The Host only selects a surface: public URLs are
 * always built from configuration.
 */
export const classifyHost = (config: AppConfig, rawHost: string | undefined): HostTarget | undefined => {
  if (!rawHost) return undefined
  const host = rawHost.toLowerCase()
  if (host === config.managementHost) return { surface: "management" }
  if (host === config.canonicalIssuerHost) return { surface: "issuer" }
  const { name } = splitPort(host)
  const suffix = `.login.${config.platformDomain}`
  if (name.startsWith("env-") && name.endsWith(suffix)) {
    const label = name.slice(4, -suffix.length)
    if (/^[a-z2-7]{32}$/.test(label)) return { surface: "interaction", environmentId: `env_${label}` }
    return undefined
  }
  if (/^[a-z0-9.-]+$/.test(name) && name.includes(".")) return { surface: "custom", hostname: name }
  return undefined
}
