import { useCallback, useEffect, useState } from "react"
import { ApiProblem, selectWorkspace } from "./api.js"
import { type Session, loadSession, signOut } from "./session.js"
import { SignIn } from "./screens/SignIn.js"
import { CreateWorkspace } from "./screens/CreateWorkspace.js"
import { Members } from "./screens/Members.js"
import { Apps } from "./screens/Apps.js"
import { Users } from "./screens/Users.js"
import { Webhooks } from "./screens/Webhooks.js"
import { ApiKeys } from "./screens/ApiKeys.js"
import { Audit } from "./screens/Audit.js"
import { Usage } from "./screens/Usage.js"
import { Domains } from "./screens/Domains.js"
import { EnvironmentSettings } from "./screens/EnvironmentSettings.js"
import { Connections } from "./screens/Connections.js"
import { ImportExport } from "./screens/ImportExport.js"

type Screen =
  | "apps"
  | "environment"
  | "connections"
  | "users"
  | "import"
  | "webhooks"
  | "api-keys"
  | "domains"
  | "audit"
  | "usage"
  | "members"
  | "new-workspace"

const TABS: ReadonlyArray<readonly [Screen, string]> = [
  ["apps", "Projects and apps"],
  ["environment", "Environment settings"],
  ["connections", "Connections"],
  ["users", "Users"],
  ["import", "Import"],
  ["webhooks", "Webhooks"],
  ["api-keys", "API keys"],
  ["domains", "Domains"],
  ["audit", "Audit"],
  ["usage", "Usage and billing"],
  ["members", "Members"],
]

/** The console's address: /console/w/<workspace>/<screen>. */
const parseLocation = (): { workspace: string | undefined; screen: Screen } => {
  const m = /^\/console\/w\/([^/]+)\/([a-z-]+)/.exec(location.pathname)
  const screen = (m?.[2] ?? "apps") as Screen
  return { workspace: m?.[1], screen: [...TABS.map(([s]) => s), "new-workspace"].includes(screen) ? screen : "apps" }
}

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined)
  const [failure, setFailure] = useState<string | undefined>()
  const [place, setPlace] = useState(parseLocation)

  const refresh = useCallback(async () => {
    try {
      setSession(await loadSession())
    } catch (e) {
      if (e instanceof ApiProblem && e.status === 401) setSession(null)
      else setFailure(e instanceof Error ? e.message : String(e))
    }
  }, [])
  useEffect(() => {
    void refresh()
  }, [refresh])
  useEffect(() => {
    const onPop = () => setPlace(parseLocation())
    addEventListener("popstate", onPop)
    return () => removeEventListener("popstate", onPop)
  }, [])

  const go = (workspace: string | undefined, screen: Screen) => {
    history.pushState(null, "", workspace ? `/console/w/${workspace}/${screen}` : "/console/")
    setPlace({ workspace, screen })
  }

  if (failure)
    return (
      <main>
        <h1>Console</h1>
        <p role="alert">{failure}</p>
      </main>
    )
  if (session === undefined)
    return (
      <main>
        <p>Loading…</p>
      </main>
    )
  if (session === null) return <SignIn />

  const current = session.workspaces.find((w) => w.id === place.workspace) ?? session.workspaces[0]
  selectWorkspace(current?.id)
  const screen: Screen = current === undefined ? "new-workspace" : place.screen

  return (
    <>
      <header className="topbar">
        <a className="brand" href="/console/">
          authservice console
        </a>
        <label className="switcher">
          <span>Workspace</span>
          <select
            value={screen === "new-workspace" ? "" : (current?.id ?? "")}
            aria-label="Workspace"
            onChange={(e) => (e.target.value === "" ? go(current?.id, "new-workspace") : go(e.target.value, "apps"))}
          >
            {session.workspaces.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name} ({w.role})
              </option>
            ))}
            <option value="">+ Create Workspace</option>
          </select>
        </label>
        <span className="who">{session.email}</span>
        <button
          type="button"
          onClick={async () => {
            await signOut()
            setSession(null)
            history.pushState(null, "", "/console/")
          }}
        >
          Sign out
        </button>
      </header>
      {current && screen !== "new-workspace" && (
        <nav className="tabs" aria-label="Sections">
          {TABS.map(([tab, label]) => (
            <a
              key={tab}
              href={`/console/w/${current.id}/${tab}`}
              aria-current={screen === tab ? "page" : undefined}
              onClick={(e) => {
                e.preventDefault()
                go(current.id, tab)
              }}
            >
              {label}
            </a>
          ))}
        </nav>
      )}
      <main>
        {screen === "new-workspace" && (
          <CreateWorkspace
            first={current === undefined}
            onCreated={async (id) => {
              await refresh()
              go(id, "apps")
            }}
          />
        )}
        {screen === "members" && current && (
          <Members key={current.id} workspace={current} me={session.platform_user_id} />
        )}
        {screen === "apps" && current && <Apps key={current.id} workspace={current} />}
        {screen === "users" && current && <Users key={current.id} workspaceId={current.id} />}
        {screen === "webhooks" && current && <Webhooks key={current.id} workspaceId={current.id} />}
        {screen === "api-keys" && current && <ApiKeys key={current.id} workspaceId={current.id} />}
        {screen === "environment" && current && <EnvironmentSettings key={current.id} workspaceId={current.id} />}
        {screen === "connections" && current && <Connections key={current.id} workspace={current} />}
        {screen === "import" && current && <ImportExport key={current.id} workspaceId={current.id} />}
        {screen === "domains" && current && <Domains key={current.id} workspaceId={current.id} />}
        {screen === "audit" && current && <Audit key={current.id} workspaceId={current.id} />}
        {screen === "usage" && current && <Usage key={current.id} workspaceId={current.id} />}
      </main>
    </>
  )
}
