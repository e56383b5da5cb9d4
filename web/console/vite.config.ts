import react from "@vitejs/plugin-react"
import { defineConfig } from "vite"

// Served under /console/ on the Management host with a strict CSP: no inline script or style,
// so the build emits only files (docs/decisions/admin-console.md).
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, assetsInlineLimit: 0, modulePreload: { polyfill: false } },
})
