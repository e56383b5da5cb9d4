export const me = 0
