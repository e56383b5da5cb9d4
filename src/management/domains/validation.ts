import { Effect } from "effect"
import { DnsResolver } from "./dns.js"
import type { DomainRow } from "./repo.js"

/** Where the customer publishes the verification token (one TXT record). */
export const challengeName = (hostname: string) => `_authservice-challenge.${hostname}`

/**
 * Proves control of the hostname: a TXT record at `_authservice-challenge.<hostname>` whose
 * value is the domain's verification token. Answers the validation errors (empty = valid);
 * a DNS failure is an error the caller can retry, never a crash.
 */
export const validationErrors = Effect.fnUntraced(function* (
  domain: Pick<DomainRow, "hostname" | "verification_token">,
) {
  const resolver = yield* DnsResolver
  const name = challengeName(domain.hostname)
  return yield* resolver.resolveTxt(name).pipe(
    Effect.map((records): ReadonlyArray<string> => {
      if (records.some((r) => r.trim() === domain.verification_token)) return []
      return records.length === 0
        ? [`No TXT record found at ${name}; publish one with the value ${domain.verification_token}`]
        : [`The TXT records at ${name} do not contain the verification value ${domain.verification_token}`]
    }),
    Effect.catchTag("DnsLookupFailed", (e) =>
      Effect.succeed([`The DNS lookup of ${name} (TXT) failed (${e.reason}); retry the validation later`]),
    ),
  )
})
