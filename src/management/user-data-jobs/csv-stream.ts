import { pipeline, type Readable, Transform } from "node:stream"
import { CsvError, parse } from "csv-parse"
import { SourceFailure } from "./fetch-source.js"
import { csvColumns, csvRow, type ParsedRow } from "./parse-source.js"

/**
 * A CSV source read as a stream (decisions: "User import at scale"): bytes are checked as
 * UTF-8 and parsed by csv-parse record by record, so memory holds one chunk and one record,
 * never the file. Each row carries its CSV line as csv-parse counts it (`info.lines`: the
 * header is line 1, blank lines count, a record with a quoted line break reports its last
 * line). A file-level problem (not UTF-8, not CSV, bad header, too many rows, a source
 * failure) throws a `SourceFailure`.
 */

export interface LinedRow {
  readonly line: number
  readonly parsed: ParsedRow
}

/** Fails the stream on the first byte sequence that is not UTF-8 (a split character across chunks is fine). */
const utf8Check = () => {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
  const notUtf8 = () => new SourceFailure("invalid_source", "The source is not UTF-8 text")
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      try {
        decoder.decode(chunk, { stream: true })
      } catch {
        return callback(notUtf8())
      }
      callback(null, chunk)
    },
    flush(callback) {
      try {
        decoder.decode()
      } catch {
        return callback(notUtf8())
      }
      callback()
    },
  })
}

const asSourceFailure = (error: unknown): SourceFailure =>
  error instanceof SourceFailure
    ? error
    : error instanceof CsvError
      ? new SourceFailure("invalid_source", `The source is not valid CSV (${error.message})`)
      : new SourceFailure("source_unreachable", "The connection to the source failed while reading it")

/**
 * The rows of a CSV body, in file order, numbered from 1. Ending the iteration early (return
 * or throw in the consumer) destroys the body, which closes the source's connection.
 */
export async function* csvRows(body: Readable, maxRows: number): AsyncGenerator<LinedRow> {
  const parser = parse({ bom: true, skip_empty_lines: true, relax_column_count: true, info: true })
  pipeline(body, utf8Check(), parser, () => {})
  let columns: ReturnType<typeof csvColumns> | undefined
  let row = 0
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: Array<string>; info: { lines: number } }>) {
      if (columns === undefined) {
        columns = csvColumns(record)
        if (!columns.ok) throw new SourceFailure("invalid_source", columns.message)
        continue
      }
      if (!columns.ok) continue
      row++
      if (row > maxRows) throw new SourceFailure("too_many_rows", `The source has more than ${maxRows} rows`)
      yield { line: info.lines, parsed: csvRow(columns.columns, record, row) }
    }
  } catch (error) {
    throw asSourceFailure(error)
  } finally {
    parser.destroy()
    body.destroy()
  }
  if (columns === undefined) throw new SourceFailure("invalid_source", "The CSV source has no header row")
}
