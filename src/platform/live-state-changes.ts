/**
 * In-process notice that this process wrote a column the access-token live checks read
 * (user status, security version, profile claims; a session's revocation or expiry) for a
 * user. The repositories that write those columns call it; the replica's live-state memory
 * (src/oidc/access-token/live-cache.ts) listens, so the change is seen here at once, before
 * the Postgres notification (sql/0140) that tells the other replicas comes back.
 */
type Listener = (environmentId: string, userId: string) => void

const listeners = new Set<Listener>()

export const onLiveStateChanged = (listener: Listener): (() => void) => {
  listeners.add(listener)
  return () => { listeners.delete(listener) }
}

export const liveStateChanged = (environmentId: string, userId: string) => {
  for (const listener of listeners) listener(environmentId, userId)
}
