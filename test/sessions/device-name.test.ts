import { createHash, randomBytes } from "node:crypto"
import { decodeJwt } from "jose"
import { describe, expect, it } from "vitest"
import { deviceNameOf } from "../../src/sessions/device-name.js"
import { publicApi } from "../login/support.js"
import { createUser, me, query, uniqueEmail, useMeApp } from "../me/support.js"

// device_name of a login session (spec: Session summary, /me/sessions and Management sessions):
// derived from the User-Agent of the request that completes the sign-in (docs/decisions/me.md).

const UA = {
  chromeMac:
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
  firefoxWindows: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
  safariIphone:
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
  edgeWindows:
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
  chromeAndroid:
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
}

describe("deviceNameOf", () => {
  it("names the browser and the operating system", () => {
    expect(deviceNameOf(UA.chromeMac)).toBe("Chrome on macOS")
    expect(deviceNameOf(UA.firefoxWindows)).toBe("Firefox on Windows")
    expect(deviceNameOf(UA.safariIphone)).toBe("Safari on iOS")
    expect(deviceNameOf(UA.edgeWindows)).toBe("Microsoft Edge on Windows")
    expect(deviceNameOf(UA.chromeAndroid)).toBe("Chrome on Android")
  })

  it("no User-Agent, or one naming neither a browser nor a system, gives null", () => {
    expect(deviceNameOf(undefined)).toBeNull()
    expect(deviceNameOf("")).toBeNull()
    expect(deviceNameOf("   ")).toBeNull()
    expect(deviceNameOf("x")).toBeNull()
  })
})

const ctx = useMeApp()

/** A sign-in whose completing request carries `userAgent` (or none); returns the user, its session id and access token. */
const signInWith = async (userAgent: string | undefined) => {
  const user = await createUser(ctx.app, ctx.b, uniqueEmail("device"))
  const verifier = randomBytes(32).toString("base64url")
  const created = await publicApi(ctx.app, ctx.b, "/auth/transactions", {
    body: {
      client_id: ctx.client.client_id,
      redirect_uri: ctx.client.redirect_uri,
      code_challenge_method: "S256",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      state: "s-1",
      nonce: "n-1",
      scope: "openid email",
    },
  })
  expect(created.status, created.text).toBe(201)
  const txn = created.json.transaction_id as string
  // Authenticated as an Email OTP verify leaves it (the login tests cover that step).
  await query(
    ctx.app,
    `update auth_transactions set status = 'authenticated', method = 'email_otp', user_id = $2, authenticated_at = $3
    where id = $1`,
    [txn, user.id, new Date(ctx.app.now())],
  )
  const completed = await publicApi(ctx.app, ctx.b, `/auth/transactions/${txn}/complete`, {
    method: "POST",
    ...(userAgent === undefined ? {} : { headers: { "user-agent": userAgent } }),
  })
  expect(completed.status, completed.text).toBe(200)
  const token = await ctx.app.issuer(ctx.b.environment_id, "/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: completed.json.authorization_code,
      redirect_uri: ctx.client.redirect_uri,
      code_verifier: verifier,
      client_id: ctx.client.client_id,
    }).toString(),
  })
  expect(token.status, token.text).toBe(200)
  return {
    user,
    sid: decodeJwt(token.json.access_token)["sid"] as string,
    accessToken: token.json.access_token as string,
  }
}

const managementSessions = async (userId: string) => {
  const res = await ctx.app.management(`/v1/users/${userId}/sessions?environment_id=${ctx.b.environment_id}`)
  expect(res.status, res.text).toBe(200)
  return res.json.data as Array<{ session_id: string; device_name: string | null }>
}

describe("device_name of a session", () => {
  it("is derived from the completing request's User-Agent, in /me/sessions and the Management sessions", async () => {
    const { user, sid, accessToken } = await signInWith(UA.chromeMac)
    const mine = await me(ctx, accessToken, "/sessions")
    expect(mine.status, mine.text).toBe(200)
    expect(mine.json.data).toEqual([
      expect.objectContaining({ session_id: sid, device_name: "Chrome on macOS", current: true }),
    ])
    expect(await managementSessions(user.id)).toEqual([
      expect.objectContaining({ session_id: sid, device_name: "Chrome on macOS" }),
    ])
  })

  it("is null when the completing request sends no User-Agent or an unrecognisable one", async () => {
    for (const userAgent of [undefined, "x"]) {
      const { user, sid } = await signInWith(userAgent)
      expect(await managementSessions(user.id)).toEqual([
        expect.objectContaining({ session_id: sid, device_name: null }),
      ])
    }
  })
})
