/**
 * Skein's added latency per prompt through `skein acp`: the real executable with
 * `--url`, driven over its stdio by the ACP SDK's client, against `run.start` with
 * `wait` through the typed RPC client, both on one daemon transport in this process and
 * the scripted provider, in alternating blocks; p50 and p99 and the ratio.
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import { makeRuntimeLayer } from "@skein/runtime"
import type { ProviderName } from "@skein/domain"
import { demoRegistryLayer, makeSkeinClient, serveWebSocket } from "@skein/server"
import { Effect, Layer } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Readable, Writable } from "node:stream"
import { fileURLToPath } from "node:url"
import { monotonicMs as now, percentile } from "./stats.js"

const PROMPTS = 300
const BLOCK = 25
const bin = fileURLToPath(new URL("../../../packages/server/bin/skein.js", import.meta.url))

const bench = Effect.gen(function* () {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-acp-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
  const runtime = yield* Layer.build(
    makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
  )
  const server = yield* serveWebSocket({ port: 0 }).pipe(Effect.provide(runtime))
  const rpc = yield* makeSkeinClient({ url: server.url })
  const provider = (yield* rpc.provider.list())[0]!.name as ProviderName
  const direct = yield* rpc.thread.create({ workspace: dir })

  const child = ChildProcess.spawn(process.execPath, [bin, "acp", "--url", server.url], {
    env: { ...process.env, SKEIN_HOME: dir },
    stdio: ["pipe", "pipe", "inherit"]
  })
  yield* Effect.addFinalizer(() => Effect.sync(() => child.stdin.end()))
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>
  )
  const times = { acp: [] as Array<number>, rpc: [] as Array<number> }
  yield* Effect.promise(() =>
    acp
      .client({ name: "bench" })
      .onNotification(acp.methods.client.session.update, () => undefined)
      .connectWith(stream, async (agent) => {
        await agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {}
        })
        const session = await agent.request(acp.methods.agent.session.new, { cwd: dir, mcpServers: [] })
        const viaAcp = async (n: number, into?: Array<number>) => {
          for (let i = 0; i < n; i++) {
            const t0 = now()
            await agent.request(acp.methods.agent.session.prompt, {
              sessionId: session.sessionId,
              prompt: [{ type: "text", text: "hello" }]
            })
            into?.push(now() - t0)
          }
        }
        const viaRpc = async (n: number, into?: Array<number>) => {
          for (let i = 0; i < n; i++) {
            const t0 = now()
            await Effect.runPromise(rpc.run.start({ threadId: direct.id, provider, message: "hello", wait: true }))
            into?.push(now() - t0)
          }
        }
        await viaAcp(20)
        await viaRpc(20)
        for (let b = 0; b * BLOCK < PROMPTS; b++) {
          const sides = [() => viaAcp(BLOCK, times.acp), () => viaRpc(BLOCK, times.rpc)]
          for (const side of b % 2 === 0 ? sides : [...sides].reverse()) await side()
        }
      })
  )
  const ms = (x: number) => `${x.toFixed(2)} ms`
  const [a50, r50] = [percentile(times.acp, 50), percentile(times.rpc, 50)]
  console.log(
    `prompt through skein acp --url (ACP SDK client over stdio, ${PROMPTS} prompts a side, scripted ${provider}): ` +
      `p50 ${ms(a50)} p99 ${ms(percentile(times.acp, 99))}; run.start with wait through the RPC client ` +
      `p50 ${ms(r50)} p99 ${ms(percentile(times.rpc, 99))}; added p50 ${ms(a50 - r50)}, ratio p50 ${(a50 / r50).toFixed(2)}x`
  )
})

export const run = () => Effect.runPromise(Effect.scoped(bench))
