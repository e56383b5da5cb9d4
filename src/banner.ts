import type { BootContext } from "./boot.js"

export const printUrls = ({ config, embedded }: BootContext) => {
  const scheme = config.publicScheme
  // Production output is JSON lines only, so log collectors can parse every line.
  if (config.production) {
    process.stdout.write(JSON.stringify({
      level: "info", msg: "listening", port: config.port,
      management_url: `${scheme}://${config.managementHost}`, issuer_base: `${scheme}://${config.canonicalIssuerHost}/e/`,
    }) + "\n")
    return
  }
  process.stdout.write([
    `authservice listening on ${config.listenHost ?? "every interface"}, port ${config.port}${embedded ? ` (embedded Postgres under ${config.dataDir})` : ""}`,
    `  Management API:  ${scheme}://${config.managementHost}/v1`,
    `  Issuers:         ${scheme}://${config.canonicalIssuerHost}/e/<environment_id>`,
    `  Bootstrap:       npm run -s cli -- bootstrap --json`,
    `  Health:          ${scheme}://${config.managementHost}/readyz`,
    "",
  ].join("\n"))
}
