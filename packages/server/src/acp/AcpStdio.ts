/**
 * `skein acp`: the ACP agent (AcpAgent.ts) on this process's stdio, newline-delimited
 * JSON both ways, over the Orchestrator in context. Ends when the editor closes stdin.
 */
import * as acp from "@agentclientprotocol/sdk"
import { Orchestrator } from "@skein/runtime"
import { Effect, Runtime } from "effect"
import { Readable, Writable } from "node:stream"
import { makeAcpAgent } from "./AcpAgent.js"

const VERSION = "0.1.0"

export const serveAcpStdio: Effect.Effect<void, never, Orchestrator> = Effect.gen(function* () {
  const orchestrator = yield* Orchestrator
  const runtime = yield* Effect.runtime<never>()
  const agent = makeAcpAgent({
    orchestrator,
    run: (effect) => Runtime.runPromiseExit(runtime)(effect),
    version: VERSION
  })
  const stream = acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>
  )
  const connection = agent.connect(stream)
  yield* Effect.promise(() => connection.closed)
})
