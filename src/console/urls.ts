import type { AppConfig } from "../platform/config.js"

/** Where the console is served: under `/console/` on the Management host, beside the API it calls. */
export const CONSOLE_PATH = "/console/"

export const consoleUrl = (config: AppConfig) => `${config.publicScheme}://${config.managementHost}${CONSOLE_PATH}`

/** The redirect URI of the console's client in the platform Environment. */
export const consoleCallbackUrl = (config: AppConfig) => `${consoleUrl(config)}auth/callback`
