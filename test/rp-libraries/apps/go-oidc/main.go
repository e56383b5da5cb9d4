// The Go recipe of docs/oidc-libraries.md: github.com/coreos/go-oidc with
// golang.org/x/oauth2, run unmodified by test/rp-libraries/go-oidc.browser.test.ts (values
// come from the environment). Builds with Debian's golang-go,
// golang-github-coreos-go-oidc-dev and golang-golang-x-oauth2-dev.
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log"
	"net/http"
	"net/url"
	"os"
	"sync"

	oidc "github.com/coreos/go-oidc"
	"golang.org/x/oauth2"
)

// The state of one browser's sign-in and, once signed in, its tokens (kept in memory here).
type session struct {
	State, Nonce, Verifier string
	Token                  *oauth2.Token
	IDToken                string
	Claims                 map[string]interface{} // of the ID token, checked when it arrived
}

var (
	sessions = map[string]*session{}
	mu       sync.Mutex
)

func random() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func current(w http.ResponseWriter, r *http.Request) *session {
	mu.Lock()
	defer mu.Unlock()
	if c, err := r.Cookie("rp_session"); err == nil && sessions[c.Value] != nil {
		return sessions[c.Value]
	}
	id := random()
	sessions[id] = &session{}
	http.SetCookie(w, &http.Cookie{Name: "rp_session", Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return sessions[id]
}

func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	ctx := context.Background()
	issuer, appOrigin := os.Getenv("ISSUER"), os.Getenv("APP_ORIGIN")

	provider, err := oidc.NewProvider(ctx, issuer) // discovery; the issuer must match exactly
	if err != nil {
		log.Fatal(err)
	}
	endpoint := provider.Endpoint()
	// The registered method: AuthStyleInHeader = client_secret_basic, AuthStyleInParams = client_secret_post.
	endpoint.AuthStyle = oauth2.AuthStyleInHeader
	if os.Getenv("TOKEN_ENDPOINT_AUTH_METHOD") == "client_secret_post" {
		endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	config := oauth2.Config{
		ClientID:     os.Getenv("CLIENT_ID"),
		ClientSecret: os.Getenv("CLIENT_SECRET"),
		Endpoint:     endpoint,
		RedirectURL:  appOrigin + "/callback",
		Scopes:       []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess},
	}
	// REQUIRED: go-oidc expects RS256 unless told otherwise.
	verifier := provider.Verifier(&oidc.Config{ClientID: config.ClientID, SupportedSigningAlgs: []string{oidc.ES256}})
	var metadata struct {
		EndSessionEndpoint string `json:"end_session_endpoint"`
	}
	if err := provider.Claims(&metadata); err != nil {
		log.Fatal(err)
	}

	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]bool{"authenticated": current(w, r).Token != nil})
	})

	http.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		s := current(w, r)
		s.State, s.Nonce, s.Verifier = random(), random(), random()
		challenge := sha256.Sum256([]byte(s.Verifier))
		// state, nonce and PKCE S256 are all required by this issuer.
		http.Redirect(w, r, config.AuthCodeURL(s.State, oidc.Nonce(s.Nonce),
			oauth2.SetAuthURLParam("code_challenge", base64.RawURLEncoding.EncodeToString(challenge[:])),
			oauth2.SetAuthURLParam("code_challenge_method", "S256")), http.StatusFound)
	})

	http.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		s := current(w, r)
		q := r.URL.Query()
		if q.Get("error") != "" {
			writeJSON(w, 400, map[string]string{"error": q.Get("error"), "error_description": q.Get("error_description")})
			return
		}
		if s.State == "" || q.Get("state") != s.State || q.Get("iss") != issuer { // RFC 9207: the issuer names itself
			writeJSON(w, 400, map[string]string{"error": "state or iss mismatch"})
			return
		}
		token, err := config.Exchange(r.Context(), q.Get("code"), oauth2.SetAuthURLParam("code_verifier", s.Verifier))
		if err != nil {
			writeJSON(w, 502, map[string]string{"error": err.Error()})
			return
		}
		rawIDToken, _ := token.Extra("id_token").(string)
		idToken, err := verifier.Verify(r.Context(), rawIDToken) // signature (JWKS), iss, aud, exp
		if err != nil || idToken.Nonce != s.Nonce {
			writeJSON(w, 502, map[string]string{"error": "invalid ID token"})
			return
		}
		s.Claims = map[string]interface{}{}
		_ = idToken.Claims(&s.Claims)
		s.State, s.Token, s.IDToken = "", token, rawIDToken
		http.Redirect(w, r, "/me", http.StatusFound)
	})

	http.HandleFunc("/me", func(w http.ResponseWriter, r *http.Request) {
		s := current(w, r)
		if s.Token == nil {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		var info map[string]interface{}
		userInfo, err := provider.UserInfo(r.Context(), oauth2.StaticTokenSource(s.Token))
		if err != nil {
			writeJSON(w, 502, map[string]string{"error": err.Error()})
			return
		}
		_ = userInfo.Claims(&info)
		writeJSON(w, 200, map[string]interface{}{"id_token_claims": s.Claims, "userinfo": info})
	})

	http.HandleFunc("/refresh", func(w http.ResponseWriter, r *http.Request) {
		s := current(w, r)
		// A token source whose access token is missing refreshes at once (RFC 6749 section 6).
		token, err := config.TokenSource(r.Context(), &oauth2.Token{RefreshToken: s.Token.RefreshToken}).Token()
		if err != nil {
			writeJSON(w, 502, map[string]string{"error": err.Error()})
			return
		}
		rawIDToken, _ := token.Extra("id_token").(string)
		idToken, err := verifier.Verify(r.Context(), rawIDToken) // a refreshed ID token carries no nonce
		if err != nil {
			writeJSON(w, 502, map[string]string{"error": err.Error()})
			return
		}
		claims := map[string]interface{}{}
		_ = idToken.Claims(&claims)
		rotated := token.RefreshToken != s.Token.RefreshToken
		s.Token, s.IDToken, s.Claims = token, rawIDToken, claims
		writeJSON(w, 200, map[string]interface{}{"id_token_claims": claims, "rotated": rotated})
	})

	http.HandleFunc("/logout", func(w http.ResponseWriter, r *http.Request) {
		// RP-initiated logout: go-oidc has no helper; the endpoint comes from discovery.
		s := current(w, r)
		params := url.Values{"post_logout_redirect_uri": {appOrigin + "/"}, "client_id": {config.ClientID}}
		if s.IDToken != "" {
			params.Set("id_token_hint", s.IDToken)
		}
		s.Token, s.IDToken, s.Claims = nil, "", nil
		http.Redirect(w, r, metadata.EndSessionEndpoint+"?"+params.Encode(), http.StatusFound)
	})

	log.Fatal(http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil))
}
