import { ConfigInvalid } from "../config-invalid.js"

/** LOG_LEVEL's values, least to most severe; every process reads the same variable. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const
export type LogLevelName = (typeof LOG_LEVELS)[number]

/** LOG_LEVEL (default `info`); anything else is a configuration error naming the values. */
export const parseLogLevel = (raw: string | undefined): LogLevelName => {
  const value = (raw || "info").toLowerCase()
  if ((LOG_LEVELS as ReadonlyArray<string>).includes(value)) return value as LogLevelName
  throw new ConfigInvalid({ message: `LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${raw}")` })
}

/** Whether a line of `level` is written under `minimum`. */
export const logLevelEnabled = (minimum: LogLevelName, level: LogLevelName) =>
  LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(minimum)

/** Effect's name of each level (References.MinimumLogLevel). */
export const EFFECT_LOG_LEVEL = { debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const
