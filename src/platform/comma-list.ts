/** The entries of a comma-separated setting, trimmed, empty ones dropped (unset: none). */
export const commaList = (raw: string | undefined): ReadonlyArray<string> =>
  (raw ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
