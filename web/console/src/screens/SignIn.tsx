import { SIGN_IN_ERRORS } from "../session.js"

export function SignIn() {
  const code = new URLSearchParams(location.search).get("signin_error")
  return (
    <main className="narrow">
      <h1>Sign in to the console</h1>
      {code !== null && (
        <p className="form-error" role="alert">
          {SIGN_IN_ERRORS[code] ?? `The sign-in failed (${code}).`}
        </p>
      )}
      <p>You sign in with your email address (a one-time code) or a passkey, on this service's own sign-in page.</p>
      <p>
        <a className="button primary" href="/console/auth/login">
          Sign in
        </a>
      </p>
    </main>
  )
}
