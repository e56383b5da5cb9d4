import { Schema } from "effect"

// The spec leaves the theme schema to us ("schema: not shown"). It is deliberately small
// and every value is validated to a form that is safe to print into CSS and HTML
// (docs/decisions/management-api.md, "Environment theme").

const HexColor = Schema.String.check(Schema.isPattern(/^#[0-9a-fA-F]{6}$/, { description: "a #RRGGBB colour" }))

const HttpsUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter(
    (value: string) => {
      try {
        const url = new URL(value)
        return url.protocol === "https:" && url.username === "" && url.password === "" && !/["'()\\\s<>]/.test(value)
          ? undefined
          : "must be an https URL without credentials, quotes, parentheses or spaces"
      } catch {
        return "must be an https URL"
      }
    },
    { description: "an https URL" },
  ),
)

export const FONT_FAMILIES = ["system", "sans-serif", "serif", "monospace"] as const

/** The theme as PUT by a client: every field optional; an omitted field takes its default. */
export const ThemeInput = Schema.Struct({
  primary_color: Schema.optionalKey(HexColor),
  background_color: Schema.optionalKey(HexColor),
  text_color: Schema.optionalKey(HexColor),
  /** Corner radius of buttons and inputs, in CSS pixels. */
  border_radius: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 24 }))),
  font_family: Schema.optionalKey(Schema.Literals(FONT_FAMILIES)),
  /** Shown above the login form; `null` shows none. */
  logo_url: Schema.optionalKey(Schema.NullOr(HttpsUrl)),
  /** The application's terms of service, linked on the login page; GET /config answers it as `legal.terms_url`. */
  terms_url: Schema.optionalKey(Schema.NullOr(HttpsUrl)),
  /** The application's privacy policy, linked on the login page; GET /config answers it as `legal.privacy_url`. */
  privacy_url: Schema.optionalKey(Schema.NullOr(HttpsUrl)),
})

/** The theme as stored and returned: every field present. */
export const Theme = Schema.Struct({
  primary_color: HexColor,
  background_color: HexColor,
  text_color: HexColor,
  border_radius: Schema.Int,
  font_family: Schema.Literals(FONT_FAMILIES),
  logo_url: Schema.NullOr(Schema.String),
  terms_url: Schema.NullOr(Schema.String),
  privacy_url: Schema.NullOr(Schema.String),
})
export type Theme = typeof Theme.Type

export const DEFAULT_THEME: Theme = {
  primary_color: "#4f46e5",
  background_color: "#ffffff",
  text_color: "#111827",
  border_radius: 8,
  font_family: "system",
  logo_url: null,
  terms_url: null,
  privacy_url: null,
}

/** PUT replaces the whole theme: omitted fields reset to their defaults. */
export const themeFromInput = (input: typeof ThemeInput.Type): Theme => ({ ...DEFAULT_THEME, ...input })

const decodeStored = Schema.decodeUnknownOption(ThemeInput)

/**
 * The effective theme of an Environment from its stored JSON (`{}` until the first PUT).
 * Used by the Management API and by the Public API's `/config`.
 */
export const resolveTheme = (stored: unknown): Theme => {
  const decoded = decodeStored(stored, { onExcessProperty: "ignore" })
  return decoded._tag === "Some" ? themeFromInput(decoded.value) : DEFAULT_THEME
}

const FONT_STACKS: Record<Theme["font_family"], string> = {
  system: `system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif`,
  "sans-serif": `"Helvetica Neue", Arial, sans-serif`,
  serif: `Georgia, "Times New Roman", serif`,
  monospace: `ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace`,
}

/**
 * The stylesheet the Hosted Login pages use for this theme: CSS custom properties plus
 * the few rules that apply them. Only validated values reach it (colours, an integer,
 * a font stack from a fixed list), so it cannot carry injected CSS.
 */
export const themeCss = (theme: Theme) => `/* Hosted Login theme (generated) */
:root {
  --auth-primary-color: ${theme.primary_color.toLowerCase()};
  --auth-background-color: ${theme.background_color.toLowerCase()};
  --auth-text-color: ${theme.text_color.toLowerCase()};
  --auth-border-radius: ${theme.border_radius}px;
  --auth-font-family: ${FONT_STACKS[theme.font_family]};
}
body {
  background-color: var(--auth-background-color);
  color: var(--auth-text-color);
  font-family: var(--auth-font-family);
}
.auth-button-primary {
  background-color: var(--auth-primary-color);
  border-color: var(--auth-primary-color);
  border-radius: var(--auth-border-radius);
}
.auth-input {
  border-radius: var(--auth-border-radius);
}
a {
  color: var(--auth-primary-color);
}
`
