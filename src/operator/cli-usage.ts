/**
 * Wrong use of the command line (an unknown command or flag, a missing or malformed value):
 * exit code 2, with the reason and where the usage is, before anything is touched
 * (docs/decisions/foundation.md, "Operator command line").
 */
export class CliUsage extends Error {}
