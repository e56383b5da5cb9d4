// The Passkey summary and its presenter are defined once, in src/users/passkey-summary.ts.
export { presentPasskey } from "../users/passkey-summary.js"
