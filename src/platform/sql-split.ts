/**
 * Splits a migration file into single statements: the Postgres driver speaks only the
 * extended protocol, which takes one statement per query. Semicolons inside quotes,
 * dollar-quoted bodies and comments do not split.
 */
export const splitStatements = (text: string): Array<string> => {
  const out: Array<string> = []
  let start = 0
  let i = 0
  const push = (end: number) => {
    const stmt = text.slice(start, end).trim()
    if (stmt.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, "").trim() !== "") out.push(stmt)
  }
  while (i < text.length) {
    const c = text[i]!
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1)
      i = close === -1 ? text.length : close + 1
    } else if (c === "-" && text[i + 1] === "-") {
      const nl = text.indexOf("\n", i)
      i = nl === -1 ? text.length : nl + 1
    } else if (c === "/" && text[i + 1] === "*") {
      const close = text.indexOf("*/", i + 2)
      i = close === -1 ? text.length : close + 2
    } else if (c === "$") {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i))
      if (tag) {
        const close = text.indexOf(tag[0], i + tag[0].length)
        i = close === -1 ? text.length : close + tag[0].length
      } else i++
    } else if (c === ";") {
      push(i)
      start = ++i
    } else i++
  }
  push(text.length)
  return out
}
