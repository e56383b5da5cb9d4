import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns"
import type { LookupFunction } from "node:net"
import { isBlockedAddress } from "./blocked-addresses.js"

/** A resolver with dns.lookup's `{all: true}` shape; tests inject one to simulate DNS answers. */
export type Resolver = (
  hostname: string,
  callback: (error: NodeJS.ErrnoException | null, addresses: ReadonlyArray<LookupAddress>) => void,
) => void

export const systemResolver: Resolver = (hostname, callback) =>
  dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => callback(error, addresses ?? []))

/** The error a connection fails with when the name resolves to a blocked address. */
export const BLOCKED_ADDRESS_CODE = "EWEBHOOKBLOCKEDADDRESS"

/**
 * A `lookup` for the socket (docs/architecture.md: webhook SSRF checks run at connect time): the name is
 * resolved once, and if ANY address it resolves to is blocked the connection is refused.
 * The socket connects only to the addresses this function returns, so an answer that
 * changes between registration and delivery (DNS rebinding) cannot reach a blocked address.
 */
export const guardedLookup = (resolve: Resolver = systemResolver): LookupFunction =>
  ((
    hostname: string,
    options: LookupOptions,
    callback: (error: NodeJS.ErrnoException | null, address: string | Array<LookupAddress>, family?: number) => void,
  ) => {
    resolve(hostname, (error, all) => {
      if (error) return callback(error, "", 0)
      const wanted =
        options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : [...all]
      if (wanted.length === 0) {
        return callback(Object.assign(new Error(`no usable address for ${hostname}`), { code: "ENOTFOUND" }), "", 0)
      }
      if (all.some((a) => isBlockedAddress(a.address))) {
        return callback(
          Object.assign(new Error("the webhook host resolves to a blocked address"), { code: BLOCKED_ADDRESS_CODE }),
          "",
          0,
        )
      }
      if (options.all) return callback(null, wanted)
      return callback(null, wanted[0]!.address, wanted[0]!.family)
    })
  }) as LookupFunction
