/**
 * Who may open a WebSocket: decided on the HTTP upgrade request, before any socket
 * exists. When the endpoint checks Host names (a daemon on a loopback address does),
 * the request's `Host` must name a loopback address or an allowed name, else 421: a
 * request addressed to another name reached this daemon by a trick (DNS rebinding)
 * or by mistake. A request that carries an `Origin` (every browser sends one, and
 * browsers apply no CORS to WebSockets) must name an allowed origin, else 403; then,
 * when the endpoint has a token, the request must present it, else 401.
 */
import { Effect, Schema } from "effect"
import { checkToken, isLoopbackHost, presentedToken, tokenMatches, type WeakToken } from "./Auth.js"

export class InvalidOrigin extends Schema.TaggedError<InvalidOrigin>()("InvalidOrigin", {
  origin: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    return `--allow-origin ${JSON.stringify(this.origin)} is not an origin: ${this.problem}. Give scheme, host and port only, e.g. http://localhost:5173.`
  }
}

export class InvalidAllowedHost extends Schema.TaggedError<InvalidAllowedHost>()("InvalidAllowedHost", {
  host: Schema.String
}) {
  override get message() {
    return `--allow-host ${JSON.stringify(this.host)} is not a host name: give a name or an address alone, without scheme, port or path, e.g. skein.internal or 192.168.1.4.`
  }
}

/** What the endpoint admits. */
export interface AccessPolicy {
  /** Required on every upgrade when set. */
  readonly token: string | undefined
  /** Origins (`scheme://host[:port]`, normalised) whose pages may connect. */
  readonly allowedOrigins: ReadonlySet<string>
  /**
   * When set, the `Host` a request names must be a loopback address or `localhost`, or
   * one of these names (lower case, IPv6 without brackets); when undefined, any Host.
   */
  readonly allowedHosts: ReadonlySet<string> | undefined
}

/**
 * The host name a `Host` header names, lower case, without port or IPv6 brackets
 * (`[::1]:7878` → `::1`), or `undefined` when it names none.
 */
export const hostOfHeader = (header: string): string | undefined => {
  const host = header.trim().toLowerCase()
  const bracketed = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(host)
  if (bracketed !== null) return bracketed[1]
  return /^([a-z0-9._-]+)(?::\d{1,5})?$/.exec(host)?.[1]
}

/** An `--allow-host` entry as `hostOfHeader` would read it; fails on anything with a port, scheme or path. */
export const normaliseAllowedHost = (host: string): Effect.Effect<string, InvalidAllowedHost> => {
  const trimmed = host.trim().toLowerCase()
  const name = /^\[([0-9a-f:.]+)\]$/.exec(trimmed)?.[1] ?? /^([0-9a-f]*:[0-9a-f:.]+|[a-z0-9._-]+)$/.exec(trimmed)?.[1]
  return name === undefined ? Effect.fail(new InvalidAllowedHost({ host })) : Effect.succeed(name)
}

/** `http://LocalHost:80/` → `http://localhost`; fails on anything that is not an http(s) origin. */
export const normaliseOrigin = (origin: string): Effect.Effect<string, InvalidOrigin> =>
  Effect.suspend(() => {
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return Effect.fail(new InvalidOrigin({ origin, problem: "it does not parse as a URL" }))
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return Effect.fail(new InvalidOrigin({ origin, problem: "only http: and https: pages can be allowed" }))
    }
    if (url.username !== "" || url.password !== "" || (url.pathname !== "/" && url.pathname !== "") || url.search) {
      return Effect.fail(new InvalidOrigin({ origin, problem: "it has a path, query or credentials" }))
    }
    return Effect.succeed(url.origin)
  })

/** Checks the token's strength and normalises the allowed origins and host names. */
export const makeAccessPolicy = (options: {
  readonly token?: string | undefined
  readonly tokenSource?: string | undefined
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  readonly allowedHosts?: ReadonlyArray<string> | undefined
}): Effect.Effect<AccessPolicy, WeakToken | InvalidOrigin | InvalidAllowedHost> =>
  Effect.gen(function* () {
    const token =
      options.token === undefined ? undefined : yield* checkToken(options.token, options.tokenSource ?? "the token")
    const allowedOrigins = new Set(yield* Effect.forEach(options.allowedOrigins ?? [], normaliseOrigin))
    const allowedHosts =
      options.allowedHosts === undefined
        ? undefined
        : new Set(yield* Effect.forEach(options.allowedHosts, normaliseAllowedHost))
    return { token, allowedOrigins, allowedHosts }
  })

export type Admission =
  | { readonly _tag: "Admit" }
  | {
      readonly _tag: "Refuse"
      readonly status: 401 | 403 | 421
      readonly reason: string
      readonly origin?: string
      readonly host?: string
    }

/** Whether a request naming `header` as its Host is addressed to this endpoint (pure). */
const hostAllowed = (header: string | undefined, allowedHosts: ReadonlySet<string>): boolean => {
  const host = header === undefined ? undefined : hostOfHeader(header)
  return host !== undefined && (isLoopbackHost(host) || allowedHosts.has(host))
}

const ADMIT: Admission = { _tag: "Admit" }

/** The origin a browser sent, normalised, or the raw header when it is not a URL (never allowed). */
const requestOrigin = (header: string): string => {
  try {
    const url = new URL(header)
    return url.origin === "null" ? header : url.origin
  } catch {
    return header
  }
}

/**
 * Whether `origin` is this endpoint's own, addressed by a loopback name (`Host:
 * 127.0.0.1:7878`, `Origin: http://127.0.0.1:7878`): only a page this server served could
 * send it, and a rebinding page names another Host.
 */
const sameLoopbackOrigin = (origin: string, hostHeader: string | undefined): boolean => {
  const host = hostHeader === undefined ? undefined : hostOfHeader(hostHeader)
  if (host === undefined || !isLoopbackHost(host)) return false
  try {
    return new URL(`http://${hostHeader!.trim()}`).origin === origin
  } catch {
    return false
  }
}

/** Whether an upgrade request may become a connection (pure). */
export const admitUpgrade = (
  request: { readonly headers: Readonly<Record<string, string | undefined>>; readonly url: string },
  policy: AccessPolicy
): Admission => {
  const hostHeader = request.headers["host"]
  if (policy.allowedHosts !== undefined && !hostAllowed(hostHeader, policy.allowedHosts)) {
    const host = (hostHeader ?? "(none)").slice(0, 200)
    return {
      _tag: "Refuse",
      status: 421,
      host,
      reason: `Skein here answers only requests addressed to a loopback name (127.0.0.1, localhost, [::1]), not to Host ${JSON.stringify(host)}. Start the daemon with --allow-host NAME to allow another name.`
    }
  }
  const originHeader = request.headers["origin"]
  if (originHeader !== undefined) {
    const origin = requestOrigin(originHeader)
    if (!policy.allowedOrigins.has(origin) && !sameLoopbackOrigin(origin, hostHeader)) {
      return {
        _tag: "Refuse",
        status: 403,
        origin: origin.slice(0, 200),
        reason: `Skein refuses WebSocket connections from pages of origin ${JSON.stringify(origin.slice(0, 200))}. Start the daemon with --allow-origin ORIGIN to let a page of yours connect.`
      }
    }
  }
  if (policy.token !== undefined && !tokenMatches(policy.token, presentedToken(request.headers, request.url))) {
    return {
      _tag: "Refuse",
      status: 401,
      reason:
        "Skein needs its token: send `Authorization: Bearer TOKEN` or `?token=TOKEN` (the daemon's token is in DATA_DIR/token unless it was started with --token)."
    }
  }
  return ADMIT
}
