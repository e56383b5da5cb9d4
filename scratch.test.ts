import { it } from "vitest"
import { startApp } from "./test/support/app.js"
it("list", async () => {
  const app = await startApp()
  const b = await app.bootstrap()
  for (const [path, body] of Object.entries({
    "/v1/environments": { project_id: b.project_id, type: "development", name: "Fuzz" },
    "/v1/connections": { environment_id: b.environment_id, provider: "google", mode: "custom", provider_client_id: "id", provider_client_secret: "secret" },
    "/v1/user-export-jobs": { environment_id: b.environment_id },
    "/v1/user-import-jobs": { environment_id: b.environment_id, format: "csv", source_url: "https://files.example.com/users.csv" },
    "/v1/domains": { environment_id: b.environment_id, hostname: "login.fuzz.example.com" },
  })) {
    const r = await app.management(path, { method: "POST", body: JSON.stringify(body) })
    console.log("RES", path, r.status, r.text.slice(0, 300))
  }
  await app.close()
})
