import type { Route } from "../http/route.js"
import { configRoutes } from "./config/http.js"
import { emailOtpRoutes } from "./email-otp/http.js"
import { transactionRoutes } from "./transactions/http.js"

/** The login routes of the Public Authentication API (paths without the `/v1` prefix). */
export const loginRoutes: ReadonlyArray<Route> = [...configRoutes, ...transactionRoutes, ...emailOtpRoutes]
