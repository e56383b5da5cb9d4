// Hosted Login: passkeys. Loaded before /login/assets/login.js (both `defer`, so in order),
// it contributes to the page through window.HostedLoginExtensions:
// - methods.passkey: the "Sign in with a passkey" control for `available_methods` "passkey"
//   (discoverable login: no email is asked for);
// - afterAuthenticated: after an Email OTP verification, offers to create a passkey before
//   the sign-in completes ("Not now" completes at once).
// Same-origin Public API calls only; no inline script (strict CSP).
"use strict"
;(() => {
  if (!window.PublicKeyCredential || !navigator.credentials) return // no WebAuthn: the page shows no passkey control
  window.HostedLoginExtensions = window.HostedLoginExtensions || {}
  var ext = window.HostedLoginExtensions
  ext.methods = ext.methods || {}

  // ---- JSON <-> WebAuthn (binary values are base64url strings in the API) --------------
  function fromB64u(s) {
    var b64 = s.replace(/-/g, "+").replace(/_/g, "/")
    while (b64.length % 4) b64 += "="
    var bin = atob(b64)
    var bytes = new Uint8Array(bin.length)
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i)
    return bytes.buffer
  }
  function toB64u(buffer) {
    var bytes = new Uint8Array(buffer)
    var bin = ""
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i])
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
  }
  function descriptors(list) {
    return (list || []).map((d) => ({ type: d.type, id: fromB64u(d.id), transports: d.transports }))
  }
  function creationOptions(o) {
    if (PublicKeyCredential.parseCreationOptionsFromJSON) return PublicKeyCredential.parseCreationOptionsFromJSON(o)
    return {
      rp: o.rp,
      user: { id: fromB64u(o.user.id), name: o.user.name, displayName: o.user.displayName },
      challenge: fromB64u(o.challenge),
      pubKeyCredParams: o.pubKeyCredParams,
      timeout: o.timeout,
      excludeCredentials: descriptors(o.excludeCredentials),
      authenticatorSelection: o.authenticatorSelection,
      attestation: o.attestation,
      extensions: o.extensions,
    }
  }
  function requestOptions(o) {
    if (PublicKeyCredential.parseRequestOptionsFromJSON) return PublicKeyCredential.parseRequestOptionsFromJSON(o)
    return {
      challenge: fromB64u(o.challenge),
      rpId: o.rpId,
      timeout: o.timeout,
      allowCredentials: descriptors(o.allowCredentials),
      userVerification: o.userVerification,
    }
  }
  function credentialJSON(c) {
    if (typeof c.toJSON === "function") return c.toJSON()
    var r = c.response
    var response = { clientDataJSON: toB64u(r.clientDataJSON) }
    if (r.attestationObject) {
      response.attestationObject = toB64u(r.attestationObject)
      if (r.getTransports) response.transports = r.getTransports()
    } else {
      response.authenticatorData = toB64u(r.authenticatorData)
      response.signature = toB64u(r.signature)
      if (r.userHandle) response.userHandle = toB64u(r.userHandle)
    }
    return {
      id: c.id,
      rawId: toB64u(c.rawId),
      type: c.type,
      response: response,
      clientExtensionResults: c.getClientExtensionResults(),
    }
  }

  var MESSAGES = {
    NotAllowedError: "The passkey request was cancelled or timed out.",
    InvalidStateError: "This device already holds a passkey for your account.",
    SecurityError: "Passkeys cannot be used on this address.",
    webauthn_verification_failed: "That passkey could not be verified. Try again.",
    reauthentication_required: "Please sign in again before adding a passkey.",
    transaction_not_authenticated: "Please sign in before adding a passkey.",
  }
  function explain(err, kit) {
    var key = err && (err.code || err.name)
    return MESSAGES[key] || kit.explain(err)
  }

  // ---- sign in with a passkey --------------------------------------------------------
  ext.methods.passkey = (box, kit) => {
    var button = kit.h("button", {
      type: "button",
      id: "passkey-signin",
      class: "primary",
      text: "Sign in with a passkey",
    })
    button.addEventListener("click", () => {
      kit.fail("")
      kit.say("Waiting for your passkey…")
      button.disabled = true
      kit
        .api("POST", kit.txnPath + "/passkeys/authentication/options", {})
        .then((options) => navigator.credentials.get({ publicKey: requestOptions(options) }))
        .then((credential) => {
          kit.say("Checking your passkey…")
          return kit.api("POST", kit.txnPath + "/passkeys/authentication/verify", {
            credential: credentialJSON(credential),
          })
        })
        .then(kit.completeAndReturn)
        .then(null, (err) => {
          button.disabled = false
          kit.say("")
          kit.fail(explain(err, kit))
        })
    })
    box.appendChild(button)
  }

  // ---- after an Email OTP sign-in: offer to create a passkey -------------------------
  ext.afterAuthenticated = (kit) => {
    var box = document.getElementById("methods")
    while (box.firstChild) box.removeChild(box.firstChild)
    var create = kit.h("button", { type: "button", id: "passkey-create", class: "primary", text: "Create a passkey" })
    var skip = kit.h("button", { type: "button", id: "passkey-skip", class: "link", text: "Not now" })
    var section = kit.h(
      "section",
      { class: "method", "data-method": "passkey-offer" },
      kit.h("h2", { text: "Sign in faster next time" }),
      kit.h("p", {
        class: "muted",
        text: "Create a passkey on this device: next time you sign in with your fingerprint, face or screen lock, without a code.",
      }),
      create,
      kit.h("div", { class: "row" }, skip),
    )
    box.appendChild(section)
    kit.say("You are signed in.")
    create.focus()
    return new Promise((resolve, reject) => {
      function finish() {
        kit.completeAndReturn().then(resolve, reject)
      }
      skip.addEventListener("click", () => {
        create.disabled = true
        skip.disabled = true
        finish()
      })
      create.addEventListener("click", () => {
        kit.fail("")
        create.disabled = true
        skip.disabled = true
        kit.say("Follow your browser's prompt to create the passkey…")
        kit
          .api("POST", kit.txnPath + "/passkeys/registration/options", {})
          .then((options) => navigator.credentials.create({ publicKey: creationOptions(options) }))
          .then((credential) =>
            kit.api("POST", kit.txnPath + "/passkeys/registration/verify", {
              credential: credentialJSON(credential),
            }),
          )
          .then(
            () => {
              kit.say("Passkey created.")
              finish()
            },
            (err) => {
              create.disabled = false
              skip.disabled = false
              kit.say("")
              kit.fail(explain(err, kit))
            },
          )
      })
    })
  }
})()
