import { assetRoutes } from "./assets.js"
import { memberRoutes } from "./members.js"
import { sessionRoutes } from "./session.js"
import { signInRoutes } from "./sign-in.js"

/** The console on the Management host: its files, sign-in and sign-out, who is signed in, members. */
export const consoleRoutes = [...assetRoutes, ...signInRoutes, ...sessionRoutes, ...memberRoutes]
