// A tiny CBOR encoder (RFC 8949) for the software authenticator: unsigned and negative
// integers, byte strings, text strings, arrays and maps (keys kept in insertion order,
// which is what authenticators do for COSE keys and attestation objects).

export type CborValue = number | Uint8Array | string | ReadonlyArray<CborValue> | CborMap
export class CborMap {
  constructor(readonly entries: ReadonlyArray<readonly [number | string, CborValue]>) {}
}

const head = (major: number, length: number): Buffer => {
  if (length < 24) return Buffer.from([(major << 5) | length])
  if (length < 0x100) return Buffer.from([(major << 5) | 24, length])
  if (length < 0x10000) {
    const b = Buffer.alloc(3)
    b[0] = (major << 5) | 25
    b.writeUInt16BE(length, 1)
    return b
  }
  const b = Buffer.alloc(5)
  b[0] = (major << 5) | 26
  b.writeUInt32BE(length, 1)
  return b
}

export const encodeCbor = (value: CborValue): Buffer => {
  if (typeof value === "number") {
    if (!Number.isInteger(value)) throw new Error("only integers are supported")
    return value >= 0 ? head(0, value) : head(1, -1 - value)
  }
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8")
    return Buffer.concat([head(3, bytes.length), bytes])
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)])
  if (value instanceof CborMap) {
    return Buffer.concat([
      head(5, value.entries.length),
      ...value.entries.flatMap(([k, v]) => [encodeCbor(k), encodeCbor(v)]),
    ])
  }
  return Buffer.concat([head(4, value.length), ...value.map(encodeCbor)])
}
