// Breaks nothing-imports-the-root: a feature reads the composition root.
import { allRoutes } from "../routes.js"
// An allowed climb (CLIMBS: login may read oidc/codes/): not a violation.
import { issueCode } from "../oidc/codes/issue.js"

export const loginRoutes = [allRoutes, issueCode]
