import { Context, Layer } from "effect"
import { DISCOVERY_CACHE_POLICY } from "./providers/discovery.js"
import { makeRefreshingCache } from "./providers/refreshing-cache.js"
import type { DiscoveryCache, DiscoveryDocument } from "./providers/types.js"

/**
 * The social providers' discovery documents, kept in this process's memory (decisions, Social
 * login, "Provider discovery cache"). Per application instance, not per module: two apps in
 * one process (tests) may reach providers through different fetch policies
 * (SOCIAL_PROVIDER_HOSTS, WEBHOOK_ALLOW_PRIVATE_TARGETS), and a document one of them may fetch
 * must not be served to the other. Nothing here needs to be shared between replicas: each
 * fetches the same public document.
 */
export class ProviderDiscoveryCache extends Context.Service<ProviderDiscoveryCache, DiscoveryCache>()(
  "social/ProviderDiscoveryCache",
) {}

export const ProviderDiscoveryCacheLive = Layer.sync(ProviderDiscoveryCache, () =>
  makeRefreshingCache<DiscoveryDocument>(DISCOVERY_CACHE_POLICY),
)
