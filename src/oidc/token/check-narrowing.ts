/**
 * Spec, Token: "`scope` and `resource` may only narrow the original grant; omitted values
 * keep the original grant; widening gives invalid_scope. Resource on code exchange may only
 * narrow the set stored at authorize time." Returns the effective set, or the values
 * outside the grant.
 */
export const narrow = (
  granted: ReadonlyArray<string>,
  requested: ReadonlyArray<string> | undefined,
):
  | { readonly ok: true; readonly values: ReadonlyArray<string> }
  | { readonly ok: false; readonly outside: ReadonlyArray<string> } => {
  if (requested === undefined || requested.length === 0) return { ok: true, values: granted }
  const outside = requested.filter((v) => !granted.includes(v))
  if (outside.length > 0) return { ok: false, outside }
  // Keep the grant's order, each value once.
  return { ok: true, values: granted.filter((v) => requested.includes(v)) }
}

/** `scope` is space-delimited (RFC 6749 3.3). */
export const splitScope = (scope: string | undefined) =>
  scope === undefined ? undefined : scope.split(" ").filter((s) => s !== "")
