import type { BootContext } from "./boot.js"

export const printUrls = ({ config, embedded }: BootContext) => {
  const scheme = config.publicScheme
  process.stdout.write([
    `authservice listening on ${config.listenHost ?? "every interface"}, port ${config.port}${embedded ? ` (embedded Postgres under ${config.dataDir})` : ""}`,
    `  Management API:  ${scheme}://${config.managementHost}/v1`,
    `  Issuers:         ${scheme}://${config.canonicalIssuerHost}/e/<environment_id>`,
    `  Bootstrap:       npm run cli -- bootstrap --json`,
    `  Health:          ${scheme}://${config.managementHost}/readyz`,
    "",
  ].join("\n"))
}
