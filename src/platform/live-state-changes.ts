/**
 * In-process notice that this process wrote a column the access-token live checks read
 * (user status, security version, profile claims; a session's revocation or expiry) for a
 * user, or a client's authentication state (introspection callers). The repositories that write those columns call it; the replica's live-state memory
 * (src/oidc/access-token/live-cache.ts) listens, so the change is seen here at once, before
 * the Postgres notification (sql/0140) that tells the other replicas comes back.
 */
export type LiveStateChange =
  | { readonly kind: "user"; readonly environmentId: string; readonly userId: string }
  /** A client's authentication state (secret, method, status, deletion); client ids are unique. */
  | { readonly kind: "client"; readonly clientId: string }

type Listener = (change: LiveStateChange) => void

const listeners = new Set<Listener>()

export const onLiveStateChanged = (listener: Listener): (() => void) => {
  listeners.add(listener)
  return () => {
    listeners.delete(listener)
  }
}

export const liveStateChanged = (environmentId: string, userId: string) => {
  for (const listener of listeners) listener({ kind: "user", environmentId, userId })
}

export const clientChanged = (clientId: string) => {
  for (const listener of listeners) listener({ kind: "client", clientId })
}
