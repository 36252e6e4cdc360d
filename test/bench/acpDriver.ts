/**
 * Skein's added latency per prompt through `"driver": "acp"`: a run with `wait` through
 * the embedded Orchestrator on an ACP instance, against the same ACP agent driven
 * directly by the ACP SDK's client (initialize, session/new, session/prompt), in
 * alternating blocks; p50 and p99 and the ratio. Two agents: the repository's agent on
 * the SDK (an echo, so the figure is Skein's own cost), and claude-agent-acp over the
 * pinned Claude Code against the Messages mock (a real agent's turn).
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import { providerRegistryLayer } from "@skein/adapters"
import type { ProviderName } from "@skein/domain"
import { makeRuntimeLayer, Orchestrator } from "@skein/runtime"
import { Effect, Layer } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Readable, Writable } from "node:stream"
import { startMessagesMock } from "../agents/mocks/MessagesMock.js"
import { acpAgents, claudeEnv, claudeExecutable, repoRoot, requireBinaries } from "../agents/support.js"
import { monotonicMs as now, percentile } from "./stats.js"

interface Agent {
  readonly id: string
  readonly label: string
  readonly command: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly configOptions: Record<string, string>
  readonly prompts: number
  readonly block: number
}

const measure = (dir: string, agent: Agent) =>
  Effect.gen(function* () {
    const configFile = Path.join(dir, `${agent.id}.json`)
    Fs.writeFileSync(
      configFile,
      JSON.stringify({
        providers: {
          acp: { driver: "acp", command: agent.command, env: agent.env, configOptions: agent.configOptions }
        }
      })
    )
    const runtime = yield* Layer.build(
      makeRuntimeLayer({ dbPath: Path.join(dir, `${agent.id}.db`) }).pipe(
        Layer.provide(providerRegistryLayer({ configFile, dataDir: dir }))
      )
    )
    const o = yield* Effect.provide(Orchestrator, runtime)
    const provider = "acp" as ProviderName
    const thread = yield* o.createThread({ workspace: dir })

    const [command, ...args] = agent.command
    const child = ChildProcess.spawn(command!, args, {
      env: { PATH: process.env.PATH ?? "", HOME: dir, ...agent.env },
      cwd: dir,
      stdio: ["pipe", "pipe", "ignore"]
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
    const stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>
    )
    const times = { skein: [] as Array<number>, direct: [] as Array<number> }
    yield* Effect.promise(() =>
      acp
        .client({ name: "bench" })
        .onNotification(acp.methods.client.session.update, () => undefined)
        .connectWith(stream, async (client) => {
          await client.request(acp.methods.agent.initialize, {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false }
          })
          const session = await client.request(acp.methods.agent.session.new, { cwd: dir, mcpServers: [] })
          for (const [configId, value] of Object.entries(agent.configOptions)) {
            await client.request(acp.methods.agent.session.setConfigOption, {
              sessionId: session.sessionId,
              configId,
              value
            })
          }
          const direct = async (n: number, into?: Array<number>) => {
            for (let i = 0; i < n; i++) {
              const t0 = now()
              await client.request(acp.methods.agent.session.prompt, {
                sessionId: session.sessionId,
                prompt: [{ type: "text", text: `hello ${i}` }]
              })
              into?.push(now() - t0)
            }
          }
          const skein = async (n: number, into?: Array<number>) => {
            for (let i = 0; i < n; i++) {
              const t0 = now()
              const ran = await Effect.runPromise(
                o.startRun({ threadId: thread.id, provider, message: `hello ${i}`, wait: true })
              )
              into?.push(now() - t0)
              if (ran.status !== "completed") throw new Error(`a bench run ended ${ran.status}`)
            }
          }
          await direct(5)
          await skein(5)
          for (let b = 0; b * agent.block < agent.prompts; b++) {
            const sides = [() => direct(agent.block, times.direct), () => skein(agent.block, times.skein)]
            for (const side of b % 2 === 0 ? sides : [...sides].reverse()) await side()
          }
        })
    )
    const ms = (x: number) => `${x.toFixed(2)} ms`
    const [s50, d50] = [percentile(times.skein, 50), percentile(times.direct, 50)]
    console.log(
      `prompt through "driver": "acp" (${agent.label}, ${agent.prompts} prompts a side, embedded Orchestrator, run with wait): ` +
        `p50 ${ms(s50)} p99 ${ms(percentile(times.skein, 99))}; the same agent driven by the ACP SDK's client ` +
        `p50 ${ms(d50)} p99 ${ms(percentile(times.direct, 99))}; added p50 ${ms(s50 - d50)}, ratio p50 ${(s50 / d50).toFixed(2)}x`
    )
  }).pipe(Effect.scoped)

const bench = Effect.gen(function* () {
  requireBinaries()
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-acp-driver-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
  const mock = yield* Effect.acquireRelease(
    Effect.promise(() => startMessagesMock()),
    (server) => Effect.promise(() => server.close())
  )
  const testAgent = Path.join(repoRoot(), "test", "dist", "agents", "mocks", "TestAcpAgent.js")
  yield* measure(dir, {
    id: "echo",
    label: "an echo agent on the ACP SDK",
    command: [process.execPath, testAgent],
    env: {},
    configOptions: {},
    prompts: 300,
    block: 25
  })
  yield* measure(dir, {
    id: "claude",
    label: "claude-agent-acp 0.101.0 over Claude Code and the Messages mock",
    command: [acpAgents.node, acpAgents.claude],
    env: { ...claudeEnv(Path.join(dir, "claude"), mock.url), CLAUDE_CODE_EXECUTABLE: claudeExecutable },
    configOptions: { mode: "default" },
    prompts: 60,
    block: 10
  })
})

export const run = () => Effect.runPromise(Effect.scoped(bench))
