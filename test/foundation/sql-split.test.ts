import { describe, expect, it } from "vitest"
import { canonicalJson } from "../../src/platform/canonical-json.js"
import { splitStatements } from "../../src/platform/sql-split.js"

describe("migration statement splitting", () => {
  it("splits on top-level semicolons only", () => {
    const text = `create table a (x text default 'a;b');
-- a comment; with a semicolon
create function f() returns trigger language plpgsql as $$
begin
  raise exception 'no; never';
end;
$$;
/* block; comment */ select "odd;name" from a;`
    const parts = splitStatements(text)
    expect(parts).toHaveLength(3)
    expect(parts[1]).toContain("raise exception 'no; never';")
    expect(parts[2]).toMatch(/select "odd;name" from a$/)
  })
})

describe("canonical JSON", () => {
  it("sorts keys recursively and keeps arrays in order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    )
  })
})
