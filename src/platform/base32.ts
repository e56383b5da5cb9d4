// RFC 4648 base32 alphabet in lower case, without padding: the spec's ids are
// "32 characters of [a-z2-7]", which is exactly 20 random bytes.
const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"

export const base32 = (bytes: Uint8Array): string => {
  let out = ""
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31]
  return out
}
