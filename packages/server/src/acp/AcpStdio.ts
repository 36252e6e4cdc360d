/**
 * `skein acp`: the ACP agent (AcpAgent.ts) on this process's stdio, newline-delimited
 * JSON both ways, over an embedded runtime's Orchestrator or a daemon's client. Lines are read with a bound: one
 * longer than `MAX_LINE_BYTES` is answered with a JSON-RPC error and skipped, never held
 * whole (the SDK would close the connection). Ends when the editor closes stdin.
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import { stdin } from "@effect/platform-node/NodeStream"
import { boundedLines } from "@skein/adapters"
import { Orchestrator } from "@skein/runtime"
import { Effect, Runtime, Stream } from "effect"
import { Writable } from "node:stream"
import { makeAcpAgent } from "./AcpAgent.js"
import type { AcpBackend } from "./AcpBackend.js"
import { SKEIN_VERSION } from "../Version.js"

/** The longest line read: a prompt of the largest message Skein takes (1 MiB) fits many times over. */
export const MAX_LINE_BYTES = 8 * 1024 * 1024

/** The request id an oversized line's first bytes name, if they do. */
const idIn = (prefix: string): string | number | null => {
  const found = /"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")/.exec(prefix)?.[1]
  if (found === undefined) return null
  try {
    return JSON.parse(found) as string | number
  } catch {
    return null
  }
}

/** Serves on stdio with the embedded runtime's Orchestrator. */
export const serveAcpStdio: Effect.Effect<void, never, Orchestrator> = Effect.flatMap(Orchestrator, (orchestrator) =>
  serveAcpWith(orchestrator)
)

/** Serves on stdio over `backend` until the editor closes stdin. */
export const serveAcpWith = (backend: AcpBackend): Effect.Effect<void> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const agent = makeAcpAgent({
      backend,
      run: (effect) => Runtime.runPromiseExit(runtime)(effect),
      version: SKEIN_VERSION
    })
    let feed: ReadableStreamDefaultController<Uint8Array> | undefined
    const input = new ReadableStream<Uint8Array>({ start: (controller) => void (feed = controller) })
    const encoder = new TextEncoder()
    const connection = agent.connect(
      acp.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, input, {
        maxMessageBytes: MAX_LINE_BYTES + 1
      })
    )
    const refuse = (bytes: number, prefix: string) =>
      process.stdout.write(
        `${JSON.stringify({
          jsonrpc: "2.0",
          id: idIn(prefix),
          error: {
            code: -32600,
            message: `Invalid request: a line of ${bytes} bytes, over the ${MAX_LINE_BYTES} Skein reads`
          }
        })}\n`
      )
    yield* stdin.pipe(
      boundedLines(MAX_LINE_BYTES),
      Stream.runForEach((line) =>
        Effect.sync(() =>
          line._tag === "Line" ? feed?.enqueue(encoder.encode(`${line.text}\n`)) : refuse(line.bytes, line.prefix)
        )
      ),
      Effect.catchAll(() => Effect.void),
      Effect.ensuring(Effect.sync(() => feed?.close()))
    )
    yield* Effect.promise(() => connection.closed)
  })
