export const subscriptions = 0
