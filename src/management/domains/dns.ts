import { Resolver } from "node:dns/promises"
import { Context, Effect, Layer, Schema } from "effect"
import { Config } from "../../platform/config.js"

/** A DNS query that failed for another reason than "no such name / no such record". */
export class DnsLookupFailed extends Schema.TaggedError<DnsLookupFailed>()("DnsLookupFailed", {
  name: Schema.String,
  reason: Schema.String,
}) {}

/**
 * The DNS lookups of custom-domain validation, as a service so tests (and operators with
 * split-horizon DNS) can point it elsewhere. `resolveTxt` answers each TXT record as one
 * string (its character-strings joined, RFC 7208 section 3.3 style); a name or type that does
 * not exist is an empty list, not a failure.
 */
export class DnsResolver extends Context.Service<
  DnsResolver,
  {
    readonly resolveTxt: (name: string) => Effect.Effect<ReadonlyArray<string>, DnsLookupFailed>
  }
>()("domains/DnsResolver") {}

/** Answers that mean "nothing published there" (node:dns error codes). */
const NO_RECORDS = new Set(["ENOTFOUND", "ENODATA", "ENONAME", "NXDOMAIN"])

/**
 * node:dns with a bounded time (2 s per try, 2 tries) so a validation request never hangs.
 * `DNS_SERVERS` (optional, read with the rest of the configuration) replaces the system resolvers.
 */
export const DnsResolverLive = Layer.effect(
  DnsResolver,
  Effect.gen(function* () {
    const { dnsServers } = yield* Config
    const resolver = new Resolver({ timeout: 2000, tries: 2 })
    if (dnsServers.length > 0) resolver.setServers(dnsServers)
    return DnsResolver.of({
      resolveTxt: (name) =>
        Effect.tryPromise({
          try: () => resolver.resolveTxt(name),
          catch: (e) => new DnsLookupFailed({ name, reason: (e as { code?: string }).code ?? "EUNKNOWN" }),
        }).pipe(
          Effect.map((records) => records.map((chunks) => chunks.join(""))),
          Effect.catchIf(
            (e) => NO_RECORDS.has(e.reason),
            () => Effect.succeed([]),
          ),
        ),
    })
  }),
)
