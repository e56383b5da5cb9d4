// Breaks http-knows-no-feature: the HTTP plumbing imports a feature instead of receiving its routes.
import { loginRoutes } from "../login/routes.js"

export const app = loginRoutes
