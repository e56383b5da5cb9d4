// Hosted Login: social providers. Loaded before /login/assets/login.js (both `defer`, so in
// order), it adds one button per social provider of `available_methods` through
// window.HostedLoginExtensions.methods. A button starts the provider's login on this page's
// transaction and sends the browser to the provider; the provider's callback brings the
// browser back to /login, which then continues (complete, or prove the existing account).
// Same-origin Public API calls only; no inline script (strict CSP).
"use strict"
;(() => {
  window.HostedLoginExtensions = window.HostedLoginExtensions || {}
  var ext = window.HostedLoginExtensions
  ext.methods = ext.methods || {}
  var LABELS = {
    google: "Google",
    apple: "Apple",
    github: "GitHub",
    microsoft: "Microsoft",
    generic_oidc: "single sign-on",
  }
  Object.keys(LABELS).forEach((provider) => {
    ext.methods[provider] = (box, kit) => {
      var button = kit.h("button", {
        type: "button",
        class: "secondary social",
        id: "social-" + provider,
        "data-provider": provider,
        text: "Continue with " + LABELS[provider],
      })
      button.addEventListener("click", () => {
        kit.fail("")
        button.disabled = true
        kit.say("Redirecting to " + LABELS[provider] + "…")
        kit.api("POST", kit.txnPath + "/social/" + encodeURIComponent(provider) + "/start").then(
          (res) => {
            window.location.assign(res.authorization_url)
          },
          (err) => {
            button.disabled = false
            kit.say("")
            kit.fail(
              err.code === "provider_unavailable"
                ? LABELS[provider] + " is not reachable right now. Try again."
                : kit.explain(err),
            )
          },
        )
      })
      box.appendChild(button)
    }
  })
})()
