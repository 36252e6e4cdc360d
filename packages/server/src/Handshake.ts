/**
 * Who may open a WebSocket: decided on the HTTP upgrade request, before any socket
 * exists. A request that carries an `Origin` (every browser sends one, and browsers
 * apply no CORS to WebSockets) must name an allowed origin, else 403; then, when the
 * endpoint has a token, the request must present it, else 401.
 */
import { Effect, Schema } from "effect"
import { checkToken, presentedToken, tokenMatches, type WeakToken } from "./Auth.js"

export class InvalidOrigin extends Schema.TaggedError<InvalidOrigin>()("InvalidOrigin", {
  origin: Schema.String,
  problem: Schema.String
}) {
  override get message() {
    return `--allow-origin ${JSON.stringify(this.origin)} is not an origin: ${this.problem}. Give scheme, host and port only, e.g. http://localhost:5173.`
  }
}

/** What the endpoint admits. */
export interface AccessPolicy {
  /** Required on every upgrade when set. */
  readonly token: string | undefined
  /** Origins (`scheme://host[:port]`, normalised) whose pages may connect. */
  readonly allowedOrigins: ReadonlySet<string>
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

/** Checks the token's strength and normalises the allowed origins. */
export const makeAccessPolicy = (options: {
  readonly token?: string | undefined
  readonly tokenSource?: string | undefined
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
}): Effect.Effect<AccessPolicy, WeakToken | InvalidOrigin> =>
  Effect.gen(function* () {
    const token =
      options.token === undefined ? undefined : yield* checkToken(options.token, options.tokenSource ?? "the token")
    const allowedOrigins = new Set(yield* Effect.forEach(options.allowedOrigins ?? [], normaliseOrigin))
    return { token, allowedOrigins }
  })

export type Admission =
  | { readonly _tag: "Admit" }
  | { readonly _tag: "Refuse"; readonly status: 401 | 403; readonly reason: string; readonly origin?: string }

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

/** Whether an upgrade request may become a connection (pure). */
export const admitUpgrade = (
  request: { readonly headers: Readonly<Record<string, string | undefined>>; readonly url: string },
  policy: AccessPolicy
): Admission => {
  const originHeader = request.headers["origin"]
  if (originHeader !== undefined) {
    const origin = requestOrigin(originHeader)
    if (!policy.allowedOrigins.has(origin)) {
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
