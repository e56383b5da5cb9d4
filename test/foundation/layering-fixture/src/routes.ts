export const allRoutes = 0
