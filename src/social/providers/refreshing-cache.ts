/**
 * A per-process cache of documents fetched from elsewhere (provider discovery documents), by
 * key, for a bounded lifetime:
 * - a fresh entry is served without any request;
 * - concurrent misses of one key share ONE load (single flight);
 * - a failed load is never cached: without a previous copy the caller gets the failure and
 *   the next call loads again;
 * - a failed refresh of an expired entry keeps serving the last good copy, and is not tried
 *   again for `retryAfterFailureMs` (an outage must not add a timeout to every start);
 * - at most `maxEntries` keys (the oldest written goes first): keys come from tenant
 *   configuration (generic OIDC issuers), so memory stays bounded.
 * Time is the caller's (`nowMs`, from Effect's Clock), so TestClock drives expiry.
 */
export interface Loaded<T> {
  readonly value: T
  /** The lifetime the source asked for (Cache-Control max-age), clamped to the policy's bounds. */
  readonly maxAgeMs?: number | undefined
}

export interface CachePolicy {
  readonly defaultTtlMs: number
  readonly minTtlMs: number
  readonly maxTtlMs: number
  readonly retryAfterFailureMs: number
  readonly maxEntries: number
}

export interface RefreshingCache<T> {
  readonly get: (key: string, nowMs: number, load: () => Promise<Loaded<T>>) => Promise<T>
}

interface Entry<T> {
  readonly value: T
  readonly expiresAtMs: number
}

export const makeRefreshingCache = <T>(policy: CachePolicy): RefreshingCache<T> => {
  const entries = new Map<string, Entry<T>>()
  const loading = new Map<string, Promise<T>>()

  const store = (key: string, entry: Entry<T>) => {
    entries.delete(key) // re-inserted last: the Map's order is the eviction order
    entries.set(key, entry)
    for (const oldest of entries.keys()) {
      if (entries.size <= policy.maxEntries) break
      entries.delete(oldest)
    }
  }

  const ttl = (maxAgeMs: number | undefined) =>
    maxAgeMs === undefined ? policy.defaultTtlMs : Math.min(policy.maxTtlMs, Math.max(policy.minTtlMs, maxAgeMs))

  return {
    get: (key, nowMs, load) => {
      const entry = entries.get(key)
      if (entry !== undefined && nowMs < entry.expiresAtMs) return Promise.resolve(entry.value)
      const pending = loading.get(key)
      if (pending !== undefined) return pending
      const promise = load().then(
        (loaded) => {
          loading.delete(key)
          store(key, { value: loaded.value, expiresAtMs: nowMs + ttl(loaded.maxAgeMs) })
          return loaded.value
        },
        (error: unknown) => {
          loading.delete(key)
          const last = entries.get(key)
          if (last === undefined) throw error
          store(key, { value: last.value, expiresAtMs: nowMs + policy.retryAfterFailureMs })
          return last.value
        },
      )
      loading.set(key, promise)
      return promise
    },
  }
}

/** `max-age` of a Cache-Control header in ms (RFC 9111 5.2.2.1); `no-store`/`no-cache` count as 0. */
export const maxAgeOf = (cacheControl: string | null): number | undefined => {
  if (cacheControl === null) return undefined
  const directives = cacheControl
    .toLowerCase()
    .split(",")
    .map((d) => d.trim())
  if (directives.includes("no-store") || directives.includes("no-cache")) return 0
  const maxAge = directives.map((d) => /^max-age="?(\d{1,10})"?$/.exec(d)?.[1]).find((v) => v !== undefined)
  return maxAge === undefined ? undefined : Number(maxAge) * 1000
}
