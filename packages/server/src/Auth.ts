/**
 * Tokens: how strong one must be, where a request presents it, and how it is
 * compared. A non-loopback bind needs a token given on purpose (`--token`), never
 * only the generated one.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Effect, Schema } from "effect"

/** 32 characters: 128 bits of hex, about 190 of base64url. */
export const MIN_TOKEN_CHARS = 32
/** Fewer distinct characters than this is a pattern (`aaaa…`, `abab…`), not a secret. */
const MIN_DISTINCT_CHARS = 8

export class InsecureBind extends Schema.TaggedError<InsecureBind>()("InsecureBind", { host: Schema.String }) {
  override get message() {
    return `Refusing to listen on ${this.host} without a token: a non-loopback address exposes Skein to the network. Pass --token (or set SKEIN_TOKEN) with at least ${MIN_TOKEN_CHARS} random characters, or bind 127.0.0.1.`
  }
}

export class WeakToken extends Schema.TaggedError<WeakToken>()("WeakToken", {
  /** Where the token came from: `--token`, `SKEIN_TOKEN`, a file path. */
  source: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    return `The token from ${this.source} is too weak: ${this.problem}. Use at least ${MIN_TOKEN_CHARS} random visible ASCII characters (e.g. the output of \`openssl rand -hex 32\`), or give none and let the daemon generate one.`
  }
}

/** Why a token is too weak, or `undefined` when it is strong enough. */
export const tokenWeakness = (token: string): string | undefined => {
  if (token.trim().length === 0) return "it is empty or only whitespace"
  if (!/^[\x21-\x7e]+$/.test(token)) return "it contains whitespace, control or non-ASCII characters"
  if (token.length < MIN_TOKEN_CHARS) return `it is ${token.length} characters long`
  if (new Set(token).size < MIN_DISTINCT_CHARS) return `it uses only ${new Set(token).size} distinct characters`
  return undefined
}

/** Fails with `WeakToken` unless `token` is strong enough. */
export const checkToken = (token: string, source: string): Effect.Effect<string, WeakToken> => {
  const problem = tokenWeakness(token)
  return problem === undefined ? Effect.succeed(token) : Effect.fail(new WeakToken({ source, problem }))
}

export const isLoopbackHost = (host: string): boolean => {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase()
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/**
 * Fails with `InsecureBind` when a non-loopback host has no token given on purpose
 * (its strength is `checkToken`'s business).
 */
export const checkBind = (host: string, explicitToken: string | undefined): Effect.Effect<void, InsecureBind> =>
  isLoopbackHost(host) || (explicitToken !== undefined && explicitToken.trim().length > 0)
    ? Effect.void
    : Effect.fail(new InsecureBind({ host }))

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/** Constant-time comparison (on equal-length digests, so the length leaks nothing either). */
export const tokenMatches = (expected: string, presented: string | undefined): boolean =>
  presented !== undefined && timingSafeEqual(digest(expected), digest(presented))

/** The token of an `Authorization: Bearer T` header, if it is one. */
export const bearerToken = (authorization: string): string | undefined =>
  /^Bearer\s+(.+)$/i.exec(authorization.trim())?.[1]

/** The token a request presents: `Authorization: Bearer T`, else a `skein.token.T` WebSocket subprotocol, else the `token` query parameter. */
export const presentedToken = (
  headers: Readonly<Record<string, string | undefined>>,
  url: string
): string | undefined => {
  const authorization = headers["authorization"]
  if (authorization !== undefined) return bearerToken(authorization)
  // A page cannot set headers: the inspector offers the token as a subprotocol, `skein.token.TOKEN`.
  const offered = headers["sec-websocket-protocol"]
    ?.split(",")
    .map((protocol) => protocol.trim())
    .find((protocol) => protocol.startsWith("skein.token."))
  if (offered !== undefined) return offered.slice("skein.token.".length)
  try {
    return new URL(url, "http://localhost").searchParams.get("token") ?? undefined
  } catch {
    return undefined
  }
}
