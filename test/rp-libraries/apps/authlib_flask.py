"""The Flask + Authlib recipe of docs/oidc-libraries.md, run unmodified by
test/rp-libraries/python-authlib.browser.test.ts (values come from the environment).

Runs on Debian's python3-authlib, python3-flask and python3-requests.
"""
import os
from urllib.parse import urlencode

from authlib.integrations.flask_client import OAuth
from flask import Flask, jsonify, redirect, session, url_for

ISSUER = os.environ["ISSUER"]                     # http(s)://host/e/env_...
APP_ORIGIN = os.environ["APP_ORIGIN"]             # this app, e.g. https://app.example.com

app = Flask(__name__)
app.secret_key = os.environ["SESSION_SECRET"]     # Flask signs its session cookie with it

oauth = OAuth(app)
oauth.register(
    name="authservice",
    server_metadata_url=f"{ISSUER}/.well-known/openid-configuration",
    client_id=os.environ["CLIENT_ID"],
    client_secret=os.environ["CLIENT_SECRET"],
    client_kwargs={
        "scope": "openid profile email offline_access",  # offline_access: a refresh token
        "code_challenge_method": "S256",                 # REQUIRED: Authlib sends no PKCE without it
        "token_endpoint_auth_method": os.environ.get("TOKEN_ENDPOINT_AUTH_METHOD", "client_secret_basic"),
    },
)


@app.route("/")
def home():
    return jsonify(authenticated="token" in session)


@app.route("/login")
def login():
    # Authlib adds state and (scope openid) a nonce by itself, and keeps them with the PKCE verifier in the session.
    return oauth.authservice.authorize_redirect(f"{APP_ORIGIN}/callback")


@app.route("/callback")
def callback():
    # Checks state, exchanges the code with the verifier and validates the ID token
    # (ES256 from discovery, iss, aud, exp, nonce) against the issuer's JWKS.
    token = oauth.authservice.authorize_access_token()
    session["token"] = token
    return redirect(url_for("me"))


@app.route("/me")
def me():
    token = session.get("token")
    if token is None:
        return redirect(url_for("login"))
    userinfo = oauth.authservice.userinfo(token=token)
    return jsonify(id_token_claims=token["userinfo"], userinfo=dict(userinfo))


@app.route("/refresh")
def refresh():
    token = session["token"]
    refreshed = oauth.authservice.fetch_access_token(grant_type="refresh_token", refresh_token=token["refresh_token"])
    # A refreshed ID token has no nonce; Authlib checks one only when it is given.
    claims = oauth.authservice.parse_id_token(refreshed, nonce=None)
    session["token"] = {**refreshed, "userinfo": claims}
    return jsonify(id_token_claims=dict(claims), rotated=refreshed["refresh_token"] != token["refresh_token"])


@app.route("/logout")
def logout():
    # RP-initiated logout: Authlib has no helper; the endpoint comes from discovery.
    token = session.pop("token", None)
    metadata = oauth.authservice.load_server_metadata()
    params = {"post_logout_redirect_uri": f"{APP_ORIGIN}/", "client_id": oauth.authservice.client_id}
    if token is not None:
        params["id_token_hint"] = token["id_token"]
    return redirect(f"{metadata['end_session_endpoint']}?{urlencode(params)}")


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(os.environ["PORT"]))
