import { createSocket } from "node:dgram"

/**
 * A tiny authoritative DNS server over UDP on 127.0.0.1 for domain-validation tests: the app's
 * real resolver (node:dns, pointed here by DNS_SERVERS) queries it. It answers TXT records
 * from `txt`, NXDOMAIN for unknown names, and SERVFAIL for names in `failing`.
 */
export const startDnsServer = async () => {
  const txt = new Map<string, Array<string>>()
  const failing = new Set<string>()
  const socket = createSocket("udp4")
  socket.on("message", (query, peer) => {
    if (query.length < 12) return
    // Question: QNAME labels from offset 12, then QTYPE and QCLASS.
    const labels: Array<string> = []
    let offset = 12
    while (offset < query.length && query[offset]! !== 0) {
      const length = query[offset]!
      labels.push(query.subarray(offset + 1, offset + 1 + length).toString("latin1"))
      offset += 1 + length
    }
    const questionEnd = offset + 5
    const name = labels.join(".").toLowerCase()
    const qtype = query.readUInt16BE(offset + 1)
    const records = qtype === 16 ? (txt.get(name) ?? []) : []
    const rcode = failing.has(name) ? 2 : txt.has(name) ? 0 : 3
    const answers =
      rcode === 0
        ? records.map((value) => {
            // A TXT value longer than 255 bytes is split into character-strings.
            const bytes = Buffer.from(value, "utf8")
            const chunks: Array<Buffer> = []
            for (let i = 0; i < Math.max(bytes.length, 1); i += 255) {
              const part = bytes.subarray(i, i + 255)
              chunks.push(Buffer.concat([Buffer.from([part.length]), part]))
            }
            const rdata = Buffer.concat(chunks)
            const rr = Buffer.alloc(12)
            rr.writeUInt16BE(0xc00c, 0) // pointer to the question's name
            rr.writeUInt16BE(16, 2) // TXT
            rr.writeUInt16BE(1, 4) // IN
            rr.writeUInt32BE(60, 6) // TTL
            rr.writeUInt16BE(rdata.length, 10)
            return Buffer.concat([rr, rdata])
          })
        : []
    const header = Buffer.alloc(12)
    header.writeUInt16BE(query.readUInt16BE(0), 0)
    header.writeUInt16BE(0x8400 | (query.readUInt16BE(2) & 0x0100) | 0x0080 | rcode, 2) // QR, AA, RD copied, RA
    header.writeUInt16BE(1, 4)
    header.writeUInt16BE(answers.length, 6)
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...answers]), peer.port, peer.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve))
  return {
    address: `127.0.0.1:${socket.address().port}`,
    /** Publishes (or replaces) the TXT records of a name; an empty list makes the name exist without TXT. */
    setTxt: (name: string, values: Array<string>) => {
      failing.delete(name)
      txt.set(name, values)
    },
    remove: (name: string) => {
      txt.delete(name)
      failing.delete(name)
    },
    fail: (name: string) => {
      failing.add(name)
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  }
}
