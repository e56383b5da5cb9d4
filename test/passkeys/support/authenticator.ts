import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto"
import { CborMap, encodeCbor } from "./cbor.js"

// A software WebAuthn authenticator + client (WebAuthn Level 3): a P-256 key per credential,
// a real CBOR attestation object with fmt "none", real authenticatorData (rpIdHash, flags
// UP/UV/BE/BS/AT, signCount, attested credential data with a COSE_Key) and real ES256
// signatures over authenticatorData || SHA-256(clientDataJSON). Every knob a test needs to
// break one check at a time is an option.

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest()
const b64u = (data: Uint8Array) => Buffer.from(data).toString("base64url")

const FLAG_UP = 0x01
const FLAG_UV = 0x04
const FLAG_BE = 0x08
const FLAG_BS = 0x10
const FLAG_AT = 0x40

export interface StoredCredential {
  readonly id: string
  readonly privateKey: KeyObject
  readonly rpId: string
  readonly userHandle: string
  signCount: number
}

export interface CreationOptionsLike {
  readonly challenge: string
  readonly rp: { readonly id: string; readonly name: string }
  readonly user: { readonly id: string; readonly name: string; readonly displayName: string }
}

export interface RequestOptionsLike {
  readonly challenge: string
  readonly rpId: string
}

export interface CeremonyKnobs {
  /** clientDataJSON.origin (required: what the browser would report). */
  readonly origin: string
  /** The RP ID whose hash goes into authenticatorData (default: the options' RP ID). */
  readonly rpId?: string
  /** User Present / User Verified flags (default on). */
  readonly up?: boolean
  readonly uv?: boolean
  /** clientDataJSON.challenge (default: the options' challenge). */
  readonly challenge?: string
  /** clientDataJSON.type (default webauthn.create / webauthn.get). */
  readonly type?: string
}

export interface AuthenticatorOptions {
  /** Backup Eligible / Backup State flags: a synced passkey has both. */
  readonly backupEligible?: boolean
  readonly backedUp?: boolean
  /** 16 bytes; all zero by default (as "none" attestation reports). */
  readonly aaguid?: Uint8Array
}

export class SoftwareAuthenticator {
  readonly credentials = new Map<string, StoredCredential>()
  constructor(readonly options: AuthenticatorOptions = {}) {}

  private flags(knobs: CeremonyKnobs, extra = 0) {
    let flags = extra
    if (knobs.up !== false) flags |= FLAG_UP
    if (knobs.uv !== false) flags |= FLAG_UV
    if (this.options.backupEligible) flags |= FLAG_BE
    if (this.options.backedUp) flags |= FLAG_BS
    return flags
  }

  private clientData(type: string, challenge: string, origin: string) {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))
  }

  /** navigator.credentials.create(): returns the credential as PublicKeyCredential.toJSON() does. */
  create(options: CreationOptionsLike, knobs: CeremonyKnobs & { readonly signCount?: number }) {
    const rpId = knobs.rpId ?? options.rp.id
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const jwk = publicKey.export({ format: "jwk" })
    const credentialId = randomBytes(32)
    const coseKey = encodeCbor(
      new CborMap([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, "base64url")],
        [-3, Buffer.from(jwk.y!, "base64url")],
      ]),
    )
    const counter = Buffer.alloc(4)
    counter.writeUInt32BE(knobs.signCount ?? 0)
    const idLength = Buffer.alloc(2)
    idLength.writeUInt16BE(credentialId.length)
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([this.flags(knobs, FLAG_AT)]),
      counter,
      Buffer.from(this.options.aaguid ?? new Uint8Array(16)),
      idLength,
      credentialId,
      coseKey,
    ])
    const attestationObject = encodeCbor(
      new CborMap([
        ["fmt", "none"],
        ["attStmt", new CborMap([])],
        ["authData", authData],
      ]),
    )
    const clientDataJSON = this.clientData(
      knobs.type ?? "webauthn.create",
      knobs.challenge ?? options.challenge,
      knobs.origin,
    )
    const id = b64u(credentialId)
    this.credentials.set(id, { id, privateKey, rpId, userHandle: options.user.id, signCount: knobs.signCount ?? 0 })
    return {
      id,
      rawId: id,
      type: "public-key" as const,
      response: {
        clientDataJSON: b64u(clientDataJSON),
        attestationObject: b64u(attestationObject),
        transports: ["internal"],
      },
      authenticatorAttachment: "platform" as const,
      clientExtensionResults: {},
    }
  }

  /**
   * navigator.credentials.get() of a discoverable credential: the one named, else the
   * (first) credential stored for the RP ID.
   */
  get(
    options: RequestOptionsLike,
    knobs: CeremonyKnobs & {
      readonly credentialId?: string
      /** Reported counter (default: stored + 1). */
      readonly signCount?: number
      /** userHandle reported (default: the stored one; null omits it). */
      readonly userHandle?: string | null
      readonly tamperSignature?: boolean
      readonly tamperAuthenticatorData?: boolean
    },
  ) {
    const credential =
      knobs.credentialId !== undefined
        ? this.credentials.get(knobs.credentialId)
        : [...this.credentials.values()].find((c) => c.rpId === options.rpId)
    if (!credential) throw new Error(`no credential for ${options.rpId}`)
    const signCount = knobs.signCount ?? credential.signCount + 1
    credential.signCount = signCount
    const counter = Buffer.alloc(4)
    counter.writeUInt32BE(signCount)
    const authData = Buffer.concat([sha256(knobs.rpId ?? options.rpId), Buffer.from([this.flags(knobs)]), counter])
    const clientDataJSON = this.clientData(
      knobs.type ?? "webauthn.get",
      knobs.challenge ?? options.challenge,
      knobs.origin,
    )
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey)
    if (knobs.tamperSignature) signature[signature.length - 1]! ^= 0x01
    if (knobs.tamperAuthenticatorData) authData[authData.length - 1]! ^= 0x01
    const userHandle = knobs.userHandle === undefined ? credential.userHandle : knobs.userHandle
    return {
      id: credential.id,
      rawId: credential.id,
      type: "public-key" as const,
      response: {
        clientDataJSON: b64u(clientDataJSON),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        ...(userHandle === null ? {} : { userHandle }),
      },
      authenticatorAttachment: "platform" as const,
      clientExtensionResults: {},
    }
  }
}
