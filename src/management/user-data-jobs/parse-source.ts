import { Result, Schema, SchemaIssue } from "effect"
import {
  AvatarUrl,
  canonicalLocale,
  canonicalTimeZone,
  Email,
  Locale,
  Metadata,
  Name,
  TimeZone,
} from "../users/schema.js"

/**
 * The import file formats (decisions: "Import file formats"). `json`: an array of user
 * objects, or `{"users": [...]}`. `csv` (RFC 4180, parsed by csv-parse): a header row naming
 * the columns, then one user per record. Fields are the spec's user create fields except
 * `environment_id` (the job's): `email` (required), `email_verified`, `name`, `avatar_url`,
 * `locale`, `timezone`, `metadata`. Rows are numbered from 1 in data order (the CSV header is
 * not a row). A file-level problem fails the whole job; a row-level problem is a row error.
 */

/** Rows of a JSON source (parsed whole, inside the request). */
export const MAX_IMPORT_ROWS = 10_000
/** Data rows of a CSV source (streamed; decisions: "User import at scale"). */
export const MAX_CSV_ROWS = 1_000_000

export const IMPORT_FIELDS = [
  "email",
  "email_verified",
  "name",
  "avatar_url",
  "locale",
  "timezone",
  "metadata",
] as const
type ImportField = (typeof IMPORT_FIELDS)[number]

export interface ImportUser {
  readonly email: string
  readonly email_verified?: boolean | undefined
  readonly name?: string | null | undefined
  readonly avatar_url?: string | null | undefined
  readonly locale?: string | null | undefined
  readonly timezone?: string | null | undefined
  readonly metadata?: Record<string, unknown> | undefined
}

export type RowErrorCode =
  | "invalid_row"
  | "unknown_field"
  | "missing_email"
  | "invalid_field"
  | "duplicate_in_file"
  | "email_already_registered"

export interface RowError {
  readonly row: number
  /** The CSV line (csv-parse's count); absent for JSON rows. */
  readonly line?: number | null | undefined
  readonly code: RowErrorCode
  readonly field: string | null
  readonly message: string
}

export type ParsedRow =
  | { readonly row: number; readonly ok: true; readonly user: ImportUser }
  | ({ readonly ok: false } & RowError)

export type SourceFailureCode = "invalid_source" | "too_many_rows"

export type ParsedSource =
  | { readonly ok: true; readonly rows: ReadonlyArray<ParsedRow> }
  | { readonly ok: false; readonly code: SourceFailureCode; readonly message: string }

const FIELD_SCHEMAS: Record<ImportField, Schema.Top & { readonly DecodingServices: never }> = {
  email: Email,
  email_verified: Schema.Boolean,
  name: Schema.NullOr(Name),
  avatar_url: Schema.NullOr(AvatarUrl),
  locale: Schema.NullOr(Locale),
  timezone: Schema.NullOr(TimeZone),
  metadata: Metadata,
}

const describe = (error: Schema.SchemaError) => SchemaIssue.makeFormatterDefault()(error.issue)

export type { ImportField }

const isField = (key: string): key is ImportField => (IMPORT_FIELDS as ReadonlyArray<string>).includes(key)

/** One row's object, checked field by field so the error names the field. */
export const validateRow = (row: number, value: unknown): ParsedRow => {
  const refuse = (code: RowErrorCode, field: string | null, message: string): ParsedRow => ({
    ok: false,
    row,
    code,
    field,
    message,
  })
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return refuse("invalid_row", null, "The row is not an object")
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) {
    if (!isField(key))
      return refuse("unknown_field", key, `Unknown field ${key}; fields are ${IMPORT_FIELDS.join(", ")}`)
  }
  if (record["email"] === undefined) return refuse("missing_email", "email", "email is required")
  const user: Record<string, unknown> = {}
  for (const field of IMPORT_FIELDS) {
    if (record[field] === undefined) continue
    const decoded = Schema.decodeUnknownResult(FIELD_SCHEMAS[field])(record[field])
    if (Result.isFailure(decoded)) return refuse("invalid_field", field, `${field}: ${describe(decoded.failure)}`)
    user[field] = decoded.success
  }
  // Stored in canonical form, as POST /users does (`en-us` -> `en-US`).
  if (typeof user["locale"] === "string") user["locale"] = canonicalLocale(user["locale"]) ?? user["locale"]
  if (typeof user["timezone"] === "string") user["timezone"] = canonicalTimeZone(user["timezone"]) ?? user["timezone"]
  return { ok: true, row, user: user as unknown as ImportUser }
}

const tooMany = (n: number): ParsedSource => ({
  ok: false,
  code: "too_many_rows",
  message: `The source has ${n} rows; at most ${MAX_IMPORT_ROWS} per job`,
})

const text = (body: Buffer): string | undefined => {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body)
  } catch {
    return undefined
  }
}

/** A JSON source, parsed whole (it is at most MAX_SOURCE_BYTES; CSV sources are streamed: ./csv-stream.ts). */
export const parseJsonSource = (body: Buffer): ParsedSource => {
  const source = text(body)
  if (source === undefined) return { ok: false, code: "invalid_source", message: "The source is not UTF-8 text" }
  let value: unknown
  try {
    value = JSON.parse(source)
  } catch (e) {
    return { ok: false, code: "invalid_source", message: `The source is not valid JSON (${(e as Error).message})` }
  }
  const list = Array.isArray(value)
    ? value
    : typeof value === "object" && value !== null && Array.isArray((value as { users?: unknown }).users)
      ? (value as { users: Array<unknown> }).users
      : undefined
  if (list === undefined)
    return {
      ok: false,
      code: "invalid_source",
      message: "A JSON source must be an array of users or an object with a users array",
    }
  if (list.length > MAX_IMPORT_ROWS) return tooMany(list.length)
  return { ok: true, rows: list.map((item, i) => validateRow(i + 1, item)) }
}

/** CSV cells are text: empty means absent; booleans and the metadata JSON are converted. */
const csvValue = (field: string, cell: string): unknown => {
  if (cell === "") return undefined
  if (field === "email_verified") {
    const lower = cell.trim().toLowerCase()
    return lower === "true" || lower === "1" ? true : lower === "false" || lower === "0" ? false : cell
  }
  if (field === "metadata") {
    try {
      return JSON.parse(cell)
    } catch {
      return cell
    }
  }
  return cell
}

/** A CSV header row's columns, or why the file cannot be imported. */
export const csvColumns = (
  header: ReadonlyArray<string>,
):
  | { readonly ok: true; readonly columns: ReadonlyArray<ImportField> }
  | { readonly ok: false; readonly message: string } => {
  const columns = header.map((h) => h.trim())
  const unknown = columns.filter((c) => !isField(c))
  if (unknown.length > 0)
    return { ok: false, message: `Unknown CSV columns: ${unknown.join(", ")}; columns are ${IMPORT_FIELDS.join(", ")}` }
  if (new Set(columns).size !== columns.length) return { ok: false, message: "A CSV column is named twice" }
  if (!columns.includes("email")) return { ok: false, message: "The CSV header must name an email column" }
  return { ok: true, columns: columns as Array<ImportField> }
}

/** One CSV record (data row `row`, from 1) as a checked row. */
export const csvRow = (columns: ReadonlyArray<ImportField>, cells: ReadonlyArray<string>, row: number): ParsedRow => {
  if (cells.length !== columns.length) {
    return {
      ok: false,
      row,
      code: "invalid_row",
      field: null,
      message: `Expected ${columns.length} fields, found ${cells.length}`,
    }
  }
  const value: Record<string, unknown> = {}
  columns.forEach((column, c) => {
    const v = csvValue(column, cells[c]!)
    if (v !== undefined) value[column] = v
  })
  return validateRow(row, value)
}
