/**
 * The inspector's page at `/inspect` on the daemon's port: static files the build wrote
 * (`dist/inspector/`, see build.mjs), answered to requests admitted as the RPC's are
 * (a loopback Host or an allowed one; a page of another origin gets nothing). The page
 * holds no data: it reads everything over the RPC, with the token its address carries in
 * the fragment (`skein inspect` prints it). Its headers keep it to itself: a content
 * security policy of its own files and this daemon's socket, no referrer, no framing.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { INSPECT_PATH } from "./Address.js"
import { type AccessPolicy, admitUpgrade } from "./Handshake.js"

const types: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "style.css": "text/css; charset=utf-8"
}

/** Where the build put the page: `dist/inspector`, found from this module (compiled or bundled). */
const findAssets = (): string | undefined => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 4; up++) {
    const candidate = Path.join(dir, "inspector")
    if (Fs.existsSync(Path.join(candidate, "index.html"))) return candidate
    dir = Path.dirname(dir)
  }
  return undefined
}

let files: ReadonlyMap<string, Uint8Array> | undefined

/** The files, read at the first request for one (a daemon nobody inspects never reads them) and kept. */
const load = (): ReadonlyMap<string, Uint8Array> => {
  if (files !== undefined) return files
  const dir = findAssets()
  files =
    dir === undefined
      ? new Map()
      : new Map(Object.keys(types).map((name) => [name, Fs.readFileSync(Path.join(dir, name))]))
  return files
}

/** The handler of `/inspect` and the files under it, for the endpoint's access policy. */
export const makeInspector = (policy: AccessPolicy) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const admission = admitUpgrade({ headers: request.headers, url: request.url }, { ...policy, token: undefined })
    if (admission._tag === "Refuse") return HttpServerResponse.text(admission.reason, { status: admission.status })
    if (request.method !== "GET") return HttpServerResponse.text("Only GET here.", { status: 405 })
    const pathname = new URL(request.url, "http://localhost").pathname
    const name =
      pathname === INSPECT_PATH || pathname === `${INSPECT_PATH}/`
        ? "index.html"
        : pathname.slice(INSPECT_PATH.length + 1)
    const files = load()
    const body = files.get(name)
    if (body === undefined) {
      return HttpServerResponse.text(
        files.size === 0 ? "This Skein was built without its inspector (run `npm run build`)." : "Not found.",
        { status: 404 }
      )
    }
    const host = request.headers["host"] ?? "127.0.0.1"
    return HttpServerResponse.uint8Array(body, {
      status: 200,
      headers: {
        "content-type": types[name]!,
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "content-security-policy": `default-src 'self'; connect-src 'self' ws://${host} wss://${host}; frame-ancestors 'none'; base-uri 'none'`
      }
    })
  })
