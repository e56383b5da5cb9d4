export const issueCode = 0
