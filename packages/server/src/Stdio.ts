/**
 * The stdio transport, for a host that spawns Skein as a child process: one JSON
 * RPC message per line on stdin, one per line on stdout. The parent process is
 * trusted (no token); frame limits and screening are the same as over WebSocket,
 * and a line over the limit is never held whole in memory.
 */
import { Orchestrator } from "@skein/runtime"
import { Effect, Stream } from "effect"
import type { Scope } from "effect"
import { boundedLines } from "@skein/adapters"
import { DEFAULT_MAX_FRAME_BYTES, makeGuardedProtocol } from "./GuardedProtocol.js"
import { makeRpcDispatch } from "./RpcDispatch.js"

export interface StdioOptions<E, R> {
  /** The bytes the parent writes (e.g. process.stdin). */
  readonly stdin: Stream.Stream<Uint8Array, E, R>
  /** Writes one line (without the newline) to the parent. */
  readonly writeLine: (line: string) => Effect.Effect<void>
  readonly maxFrameBytes?: number | undefined
}

/** Serves the RPC until stdin ends. */
export const serveStdio = <E, R>(options: StdioOptions<E, R>): Effect.Effect<void, E, Orchestrator | Scope.Scope | R> =>
  Effect.gen(function* () {
    const orchestrator = yield* Orchestrator
    const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    const guarded = yield* makeGuardedProtocol({
      maxFrameBytes,
      follow: orchestrator.follow,
      dispatch: yield* makeRpcDispatch
    })
    const connection = yield* guarded.connect({ write: options.writeLine })
    yield* options.stdin.pipe(
      boundedLines(maxFrameBytes),
      Stream.runForEach((line) =>
        line._tag === "Line" ? connection.onFrame(line.text) : connection.onOversizedFrame(line.bytes, line.prefix)
      ),
      Effect.ensuring(connection.close)
    )
  })
