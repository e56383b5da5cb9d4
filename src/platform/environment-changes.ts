/**
 * In-process notice that something an Environment serves changed on this replica (its
 * record: status, domains; or its signing keys). Memories of answers built from those
 * (src/http/static-answers.ts) listen, so this replica never serves a stale answer after
 * its own change. Other replicas learn through their own cache lifetimes.
 */
type Listener = (environmentId: string) => void

const listeners = new Set<Listener>()

export const onEnvironmentChanged = (listener: Listener): (() => void) => {
  listeners.add(listener)
  return () => {
    listeners.delete(listener)
  }
}

export const environmentChanged = (environmentId: string) => {
  for (const listener of listeners) listener(environmentId)
}
