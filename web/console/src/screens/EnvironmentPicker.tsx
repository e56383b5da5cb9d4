import { useEffect, useState } from "react"
import { list } from "../api.js"
import type { Environment, Project } from "../api/types.js"

/** Chooses the Environment a screen works in: every Environment of the Workspace's Projects. */
export function EnvironmentPicker(props: {
  workspaceId: string
  value: string | undefined
  onChange: (environment: Environment | undefined) => void
}) {
  const [environments, setEnvironments] = useState<ReadonlyArray<{ project: string; environment: Environment }>>([])
  useEffect(() => {
    void (async () => {
      const projects = (await list<Project>(`/v1/projects?workspace_id=${props.workspaceId}`, null, 100)).body.data
      const all = await Promise.all(
        projects.map(async (p) =>
          (await list<Environment>(`/v1/environments?project_id=${p.id}`, null, 100)).body.data.map((environment) => ({
            project: p.name,
            environment,
          })),
        ),
      )
      setEnvironments(all.flat())
    })()
  }, [props.workspaceId])
  return (
    <div className="field">
      <label htmlFor="environment-picker">Environment</label>
      <select
        id="environment-picker"
        value={props.value ?? ""}
        onChange={(e) => props.onChange(environments.find((x) => x.environment.id === e.target.value)?.environment)}
      >
        <option value="">Choose an Environment</option>
        {environments.map(({ project, environment }) => (
          <option key={environment.id} value={environment.id}>
            {project} / {environment.name} ({environment.type})
          </option>
        ))}
      </select>
    </div>
  )
}
