/**
 * Who may connect: loopback by default; any other bind needs a token, and a token,
 * once set, is required on every connection and compared in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Effect, Schema } from "effect"

export class InsecureBind extends Schema.TaggedError<InsecureBind>()("InsecureBind", { host: Schema.String }) {
  override get message() {
    return `Refusing to listen on ${this.host} without a token: a non-loopback address exposes Skein to the network. Pass --token (or set SKEIN_TOKEN), or bind 127.0.0.1.`
  }
}

export const isLoopbackHost = (host: string): boolean => {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase()
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/** Fails with `InsecureBind` when a non-loopback host has no token. */
export const checkBind = (host: string, token: string | undefined): Effect.Effect<void, InsecureBind> =>
  isLoopbackHost(host) || (token !== undefined && token.length > 0)
    ? Effect.void
    : Effect.fail(new InsecureBind({ host }))

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/** Constant-time comparison (on equal-length digests, so the length leaks nothing either). */
export const tokenMatches = (expected: string, presented: string | undefined): boolean =>
  presented !== undefined && timingSafeEqual(digest(expected), digest(presented))

/** The token a request presents: `Authorization: Bearer T`, else the `token` query parameter. */
export const presentedToken = (
  headers: Readonly<Record<string, string | undefined>>,
  url: string
): string | undefined => {
  const authorization = headers["authorization"]
  if (authorization !== undefined) {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim())
    return match?.[1]
  }
  try {
    return new URL(url, "http://localhost").searchParams.get("token") ?? undefined
  } catch {
    return undefined
  }
}

/** Whether a request may use the RPC (always when no token is configured). */
export const isAuthorized = (
  token: string | undefined,
  headers: Readonly<Record<string, string | undefined>>,
  url: string
): boolean => token === undefined || tokenMatches(token, presentedToken(headers, url))
