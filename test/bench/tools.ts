/**
 * Figures of Skein's tools over MCP:
 * - a tool call's round trip: `list_providers` through the daemon transport's `/mcp`
 *   (credential check, the runtime's answer) against the same MCP SDK handler answering
 *   the same JSON directly on a bare `node:http` server, both called by the SDK's own
 *   client on 127.0.0.1, in alternating blocks; p50 and p99 and the ratio;
 * - 50 subagents from one parent: 50 `spawn_subagent` calls at once (scripted children
 *   on both providers), then `await_subagents {all: true}`: time until every result is
 *   in, and the heap and resident memory they added.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server"
import { makeRuntimeLayer } from "@skein/runtime"
import { demoRegistryLayer, makeSkeinClient, serveWebSocket } from "@skein/server"
import { Effect, Layer } from "effect"
import { monotonicMs as now, percentile } from "./stats.js"

const CALLS = 2000
const BLOCK = 100
const CHILDREN = 50

/** The SDK's handler on a bare node:http server, one tool answering `answer`. */
const directServer = (answer: Record<string, unknown>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const handler = createMcpHandler(() => {
        const server = new McpServer({ name: "direct", version: "1.0.0" })
        server.registerTool("list_providers", { description: "the same answer" }, () => ({
          content: [{ type: "text", text: JSON.stringify(answer) }],
          structuredContent: answer
        }))
        return server
      })
      const http = Http.createServer(async (req, res) => {
        const chunks: Array<Buffer> = []
        for await (const chunk of req) chunks.push(chunk as Buffer)
        const headers = new Headers()
        for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value)
        const request = new Request(`http://127.0.0.1${req.url}`, {
          method: req.method!,
          headers,
          ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {})
        })
        const response = await handler.fetch(request)
        res.writeHead(response.status, Object.fromEntries(response.headers))
        res.end(Buffer.from(await response.arrayBuffer()))
      })
      await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
      return { http, url: `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp` }
    }),
    ({ http }) => Effect.promise(() => new Promise<void>((resolve) => http.close(() => resolve())))
  )

const connect = (url: string, token: string | undefined) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "bench", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } }
        })
      )
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const timedCalls = async (client: Client, count: number, name: string, args: Record<string, unknown> = {}) => {
  const times: Array<number> = []
  for (let i = 0; i < count; i++) {
    const t0 = now()
    const result = await client.callTool({ name, arguments: args })
    times.push(now() - t0)
    if (result.isError === true) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`)
  }
  return times
}

const bench = Effect.gen(function* () {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "skein-bench-tools-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
  const runtime = yield* Layer.build(
    makeRuntimeLayer({ dbPath: Path.join(dir, "skein.db") }).pipe(Layer.provide(demoRegistryLayer(dir)))
  )
  const server = yield* serveWebSocket({
    port: 0,
    subagentLimits: { maxDepth: 3, maxLiveChildren: CHILDREN }
  }).pipe(Effect.provide(runtime))
  const rpc = yield* makeSkeinClient({ url: server.url })
  const parent = yield* rpc.thread.create({ title: "bench parent" })
  const { token } = yield* rpc.thread.toolCredential({ threadId: parent.id })
  const skein = yield* connect(server.mcpUrl, token)

  // The direct server answers what Skein answers.
  const providers = (yield* Effect.promise(() => skein.callTool({ name: "list_providers", arguments: {} })))
    .structuredContent as Record<string, unknown>
  const direct = yield* directServer(providers)

  // A block a client: the SDK's client hangs each request's abort listener on one signal
  // of its transport, freed only as requests are collected.
  const sides = [
    { label: "through Skein", url: server.mcpUrl, token, times: [] as Array<number> },
    { label: "SDK server directly", url: direct.url, token: undefined, times: [] as Array<number> }
  ]
  const block = (side: (typeof sides)[0], count: number) =>
    Effect.scoped(
      Effect.flatMap(connect(side.url, side.token), (client) =>
        Effect.promise(() => timedCalls(client, count, "list_providers"))
      )
    )
  for (const side of sides) yield* block(side, 200)
  for (let b = 0; b * BLOCK < CALLS; b++) {
    for (const side of b % 2 === 0 ? sides : [...sides].reverse()) side.times.push(...(yield* block(side, BLOCK)))
  }
  const [through, alone] = sides as [(typeof sides)[0], (typeof sides)[0]]
  const ms = (x: number) => `${x.toFixed(2)} ms`
  console.log(
    `MCP tool call round trip (list_providers, SDK client on 127.0.0.1, ${CALLS} calls a side): ` +
      `through Skein p50 ${ms(percentile(through.times, 50))} p99 ${ms(percentile(through.times, 99))}; ` +
      `the SDK's server directly p50 ${ms(percentile(alone.times, 50))} p99 ${ms(percentile(alone.times, 99))}; ` +
      `ratio p50 ${(percentile(through.times, 50) / percentile(alone.times, 50)).toFixed(2)}x`
  )

  // 50 subagents from one parent.
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage()
  const t0 = now()
  const spawned = yield* Effect.promise(() =>
    Promise.all(
      Array.from({ length: CHILDREN }, (_, i) =>
        skein.callTool({
          name: "spawn_subagent",
          arguments: { provider: i % 2 === 0 ? "codex" : "claude", prompt: `child ${i} [[decide:R${i}]]` }
        })
      )
    )
  )
  const refused = spawned.filter((r) => r.isError === true).length
  const awaited = yield* Effect.promise(() =>
    skein.callTool({ name: "await_subagents", arguments: { all: true, timeoutMs: 600_000 } })
  )
  const elapsed = now() - t0
  const statuses = (awaited.structuredContent as { subagents: Array<{ status: string; result?: string }> }).subagents
  const completed = statuses.filter((s) => s.status === "completed" && s.result !== undefined).length
  const after = process.memoryUsage()
  gc?.()
  const settled = process.memoryUsage()
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`
  console.log(
    `${CHILDREN} subagents from one parent (spawn_subagent x${CHILDREN} at once, then await_subagents all): ` +
      `${completed} of ${statuses.length} results in ${ms(elapsed)} (${refused} refused); ` +
      `heap +${mb(after.heapUsed - before.heapUsed)} (+${mb(settled.heapUsed - before.heapUsed)} after gc), ` +
      `resident ${mb(before.rss)} before, ${mb(after.rss)} after`
  )
})

export const run = () => Effect.runPromise(Effect.scoped(bench))
