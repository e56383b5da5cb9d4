// Hosted Login: drives the Public Authentication API (same origin, /v1) for the one
// transaction this page was rendered for (its cookie binds it to this browser).
// No framework, no inline script (strict CSP); the DOM is built with createElement only.
"use strict"
;(() => {
  var root = document.getElementById("login")
  if (!root) return
  // Arriving from /oauth2/authorize the address holds the (already used) hand-off token:
  // show the plain page address instead; /login serves this browser's transaction on reload.
  if (window.location.pathname !== "/login" && window.history && window.history.replaceState) {
    window.history.replaceState(null, "", "/login")
  }
  var transactionId = root.getAttribute("data-transaction-id")
  var clientId = root.getAttribute("data-client-id")
  var initialStatus = root.getAttribute("data-status")
  // This browser's Hosted Login session (single sign-on): the masked email to continue as.
  var continueAsEmail = root.getAttribute("data-continue-as")
  var methodsBox = document.getElementById("methods")
  var statusBox = document.getElementById("status")
  var errorBox = document.getElementById("error")
  var legalBox = document.getElementById("legal")
  var txnPath = "/v1/auth/transactions/" + encodeURIComponent(transactionId)

  // ---- small helpers ---------------------------------------------------------------
  function h(tag, attrs) {
    var el = document.createElement(tag)
    for (var k in attrs || {}) {
      if (k === "text") el.textContent = attrs[k]
      else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), attrs[k])
      else el.setAttribute(k, attrs[k])
    }
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) el.appendChild(arguments[i])
    return el
  }
  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild)
  }
  function say(text) {
    statusBox.textContent = text || ""
  }
  function fail(text) {
    errorBox.textContent = text || ""
    errorBox.hidden = !text
  }
  function busy(form, on) {
    var controls = form.querySelectorAll("button, input")
    for (var i = 0; i < controls.length; i++) controls[i].disabled = on
    form.setAttribute("aria-busy", on ? "true" : "false")
  }

  /** fetch + JSON; rejects with {code, status, retryAfter} on a Problem Details answer. */
  function api(method, path, body) {
    return fetch(path, {
      method: method,
      headers:
        body === undefined
          ? { accept: "application/json" }
          : { "content-type": "application/json", accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    }).then(
      (res) =>
        res.text().then((text) => {
          var json = null
          try {
            json = text ? JSON.parse(text) : null
          } catch (_e) {
            json = null
          }
          if (res.ok) return json
          var retry = Number(res.headers.get("retry-after") || "0")
          throw { status: res.status, code: json?.code || "error", retryAfter: retry }
        }),
      () => {
        throw { status: 0, code: "network_error", retryAfter: 0 }
      },
    )
  }

  var MESSAGES = {
    invalid_code: "That code is not valid. Check it, or send a new code.",
    invalid_request: "That did not work. Check what you entered and try again.",
    rate_limited: "Too many attempts. Try again in {s} seconds.",
    resend_too_soon: "Please wait {s} seconds before sending a new code.",
    auth_transaction_expired: "This sign-in has expired. Return to the application and start again.",
    auth_transaction_not_found: "This sign-in is no longer available. Return to the application and start again.",
    invalid_transaction_state: "This sign-in cannot continue. Return to the application and start again.",
    new_user_creation_blocked: "New accounts cannot be created here.",
    access_denied: "This account cannot sign in.",
    network_error: "The network is unavailable. Check your connection and try again.",
  }
  function explain(err) {
    var text = MESSAGES[err?.code] || "Something went wrong. Please try again."
    return text.replace("{s}", String(Math.max(1, err?.retryAfter || 1)))
  }

  // ---- the end of every method: complete and return to the client -------------------
  function returnToClient(res) {
    // redirect_uri is registered without a fragment; the code, state and iss (RFC 9207) are appended as query parameters.
    var sep = res.redirect_uri.indexOf("?") === -1 ? "?" : "&"
    var target =
      res.redirect_uri +
      sep +
      "code=" +
      encodeURIComponent(res.authorization_code) +
      "&state=" +
      encodeURIComponent(res.state) +
      "&iss=" +
      encodeURIComponent(res.iss)
    window.location.assign(target)
  }
  // Hosted Login's own completion: as the Public API's, and it also keeps this browser signed
  // in here (the Hosted Login session a later sign-in may continue as).
  function completeAndReturn() {
    say("Signing you in…")
    return api("POST", "/login/complete").then(returnToClient)
  }

  // ---- Email OTP -------------------------------------------------------------------
  function renderEmailOtp(box) {
    var input = h("input", {
      id: "email",
      name: "email",
      type: "email",
      autocomplete: "email",
      required: "required",
      "aria-describedby": "email-help",
    })
    var form = h(
      "form",
      { id: "email-form", novalidate: "novalidate" },
      h("label", { for: "email", text: "Email address" }),
      input,
      h("p", { id: "email-help", class: "muted", text: "We will email you a 6-digit code." }),
      h("button", { type: "submit", class: "primary", text: "Continue with email" }),
    )
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      var email = input.value.trim()
      if (!email || email.indexOf("@") < 1) {
        fail("Enter your email address.")
        input.focus()
        return
      }
      fail("")
      busy(form, true)
      say("Sending a code…")
      api("POST", txnPath + "/email/start", { email: email }).then(
        (res) => {
          renderCodeStep(email, res.challenge_id)
        },
        (err) => {
          busy(form, false)
          say("")
          fail(explain(err))
        },
      )
    })
    box.appendChild(form)
  }

  function renderCodeStep(email, challengeId) {
    clear(methodsBox)
    var code = h("input", {
      id: "code",
      name: "code",
      inputmode: "numeric",
      autocomplete: "one-time-code",
      pattern: "[0-9]{6}",
      maxlength: "6",
      required: "required",
      "aria-describedby": "code-help",
    })
    var sentTo = h("p", { id: "code-help" })
    sentTo.appendChild(document.createTextNode("We sent a 6-digit code to "))
    sentTo.appendChild(h("strong", { text: email }))
    sentTo.appendChild(document.createTextNode(". It expires in 5 minutes."))
    var resend = h("button", { type: "button", id: "resend", class: "link", text: "Send a new code" })
    var change = h("button", { type: "button", id: "change-email", class: "link", text: "Use another email" })
    var form = h(
      "form",
      { id: "code-form", novalidate: "novalidate" },
      sentTo,
      h("label", { for: "code", text: "Code" }),
      code,
      h("button", { type: "submit", class: "primary", text: "Verify" }),
      h("div", { class: "row" }, resend, change),
    )
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      var value = code.value.replace(/\s+/g, "")
      if (!/^[0-9]{6}$/.test(value)) {
        fail("Enter the 6-digit code from the email.")
        code.focus()
        return
      }
      fail("")
      busy(form, true)
      say("Checking the code…")
      api("POST", txnPath + "/email/verify", { challenge_id: challengeId, code: value })
        .then(afterAuthenticated)
        .then(null, (err) => {
          busy(form, false)
          say("")
          fail(explain(err))
          code.select()
          code.focus()
        })
    })
    resend.addEventListener("click", () => {
      fail("")
      busy(form, true)
      api("POST", txnPath + "/email/resend", { challenge_id: challengeId }).then(
        () => {
          busy(form, false)
          say("A new code is on its way. Earlier codes no longer work.")
          code.value = ""
          code.focus()
        },
        (err) => {
          busy(form, false)
          fail(
            err.code === "invalid_request"
              ? "This code can no longer be renewed. Use your email address again."
              : explain(err),
          )
        },
      )
    })
    change.addEventListener("click", () => {
      fail("")
      say("")
      renderMethods(lastConfig)
    })
    methodsBox.appendChild(form)
    say("Code sent.")
    code.focus()
  }

  // ---- methods ---------------------------------------------------------------------
  // One renderer per entry of /config `available_methods`. Passkey and social providers
  // are added here later (e.g. METHODS.passkey, METHODS.google); entries without a
  // renderer are not shown.
  var METHODS = {
    email_otp: renderEmailOtp,
  }

  // Methods and steps contributed by other scripts of this page, loaded before this one
  // (/login/assets/passkey.js): window.HostedLoginExtensions = { methods: { name: render(box, kit) },
  // afterAuthenticated(kit) -> Promise }. Without it, a verified sign-in completes at once.
  var extensions = window.HostedLoginExtensions || {}
  var kit = {
    h: h,
    api: api,
    txnPath: txnPath,
    say: say,
    fail: fail,
    explain: explain,
    completeAndReturn: completeAndReturn,
  }
  Object.keys(extensions.methods || {}).forEach((name) => {
    var render = extensions.methods[name]
    METHODS[name] = (box) => {
      render(box, kit)
    }
  })
  function afterAuthenticated() {
    return extensions.afterAuthenticated ? extensions.afterAuthenticated(kit) : completeAndReturn()
  }

  // ---- single sign-on: continue as the account this browser signed in with ----------
  function renderContinueAs(config) {
    clear(methodsBox)
    methodsBox.setAttribute("aria-busy", "false")
    var who = h("p", { id: "continue-as-note" })
    who.appendChild(document.createTextNode("You are signed in as "))
    who.appendChild(h("strong", { text: continueAsEmail }))
    who.appendChild(document.createTextNode("."))
    var go = h("button", {
      type: "button",
      id: "continue-as",
      class: "primary",
      text: "Continue as " + continueAsEmail,
    })
    var other = h("button", { type: "button", id: "use-another-account", class: "link", text: "Use another account" })
    var box = h(
      "section",
      { class: "method", "data-method": "continue_as" },
      who,
      go,
      h("div", { class: "row" }, other),
    )
    go.addEventListener("click", () => {
      fail("")
      busy(box, true)
      say("Signing you in…")
      api("POST", "/login/continue-as").then(returnToClient, (err) => {
        // The earlier sign-in ended (signed out, revoked, expired): sign in again here.
        say("")
        renderMethods(config)
        fail(
          err && err.code === "invalid_transaction_state"
            ? "Your earlier sign-in has ended. Sign in again."
            : explain(err),
        )
      })
    })
    other.addEventListener("click", () => {
      fail("")
      say("")
      renderMethods(config)
    })
    methodsBox.appendChild(box)
    go.focus()
  }

  var lastConfig = null
  function renderMethods(config) {
    clear(methodsBox)
    methodsBox.setAttribute("aria-busy", "false")
    var shown = 0
    ;(config.available_methods || []).forEach((method) => {
      var render = METHODS[method]
      if (!render) return
      var section = h("section", { class: "method", "data-method": method })
      render(section)
      methodsBox.appendChild(section)
      shown++
    })
    if (shown === 0) methodsBox.appendChild(h("p", { class: "error", text: "No sign-in method is available." }))
    var first = methodsBox.querySelector("input")
    if (first) first.focus()
  }

  // ---- social login found an existing account, or an unverified address: prove it --
  // (never linked by email alone; the server accepts only that account's address or passkey,
  // and for an address the provider did not verify, only a code sent to that address)
  function renderLinkProof(config) {
    return api("GET", txnPath).then((txn) => {
      var link = txn.pending_link || {}
      var provider = link.provider || "provider"
      var note = h("p", { id: "link-note", class: "notice" })
      if (link.reason === "email_unverified") {
        note.appendChild(document.createTextNode("Your " + provider + " account did not confirm the address "))
        note.appendChild(h("strong", { text: link.masked_email || "of this sign-in" }))
        note.appendChild(document.createTextNode(". Enter that address to receive a code and continue."))
      } else {
        note.appendChild(document.createTextNode("An account with "))
        note.appendChild(h("strong", { text: link.masked_email || "this email" }))
        note.appendChild(
          document.createTextNode(" already exists. Confirm it is yours to link your " + provider + " sign-in."),
        )
      }
      methodsBox.parentNode.insertBefore(note, methodsBox)
      var proof = link.proof_methods || ["email_otp", "passkey"]
      renderMethods({
        available_methods: (config.available_methods || []).filter((m) => proof.indexOf(m) !== -1),
      })
    })
  }

  function applyTheme(theme) {
    var color = theme?.primary_color
    // CSSOM property writes are allowed by the CSP (no inline style attribute is used).
    if (typeof color === "string" && /^#[0-9a-fA-F]{6}$/.test(color))
      document.documentElement.style.setProperty("--accent", color)
  }

  function renderLegal(legal) {
    if (!legal || (!legal.terms_url && !legal.privacy_url)) return
    clear(legalBox)
    if (legal.terms_url)
      legalBox.appendChild(
        h("a", { href: legal.terms_url, rel: "noopener noreferrer", target: "_blank", text: "Terms" }),
      )
    if (legal.privacy_url)
      legalBox.appendChild(
        h("a", { href: legal.privacy_url, rel: "noopener noreferrer", target: "_blank", text: "Privacy" }),
      )
    legalBox.hidden = false
  }

  api("GET", "/v1/config?client_id=" + encodeURIComponent(clientId))
    .then((config) => {
      lastConfig = config
      applyTheme(config.theme)
      renderLegal(config.legal)
      if (initialStatus === "authenticated") {
        // A reload after verification, or back from a social provider: finish the sign-in.
        return completeAndReturn()
      }
      if (initialStatus === "link_required") return renderLinkProof(config)
      if (continueAsEmail) return renderContinueAs(config)
      renderMethods(config)
    })
    .then(null, (err) => {
      methodsBox.setAttribute("aria-busy", "false")
      clear(methodsBox)
      fail(explain(err))
    })
})()
