/** Command receipts: a stable hash of a command's payload, so a replayed commandId can be told from a reused one. */
import { createHash } from "node:crypto"

const canonical = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])])
    )
  }
  return value
}

export const payloadHash = (payload: unknown): string =>
  createHash("sha256")
    .update(JSON.stringify(canonical(payload)))
    .digest("base64url")
