/**
 * The embedding example host (packages/server/src/examples/HostServer.ts) as a child
 * process: its own route and Skein under /skein/rpc on one HTTP server.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { describe, expect, it } from "vitest"
import { ProviderName } from "@skein/domain"
import { makeSkeinClient } from "@skein/server"
import { Effect } from "effect"
import { childEnv, tempDir } from "./support.js"

const hostPath = fileURLToPath(new URL("../../packages/server/dist/src/examples/HostServer.js", import.meta.url))

describe("embedding", () => {
  it("the example host serves its own route and Skein under /skein/rpc", async () => {
    const home = tempDir("skein-host-")
    const child = spawn(process.execPath, [hostPath, "0"], { env: childEnv(home), stdio: ["ignore", "pipe", "pipe"] })
    try {
      const base = await new Promise<string>((resolve, reject) => {
        let out = ""
        let err = ""
        const timer = setTimeout(() => reject(new Error(`host did not start: ${err}`)), 20_000)
        child.stderr.on("data", (d: Buffer) => (err += d.toString()))
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString()
          const m = /example host listening on (http:\/\/\S+)/.exec(out)
          if (m) {
            clearTimeout(timer)
            resolve(m[1]!)
          }
        })
      })
      const health = await fetch(`${base}/health`)
      expect(health.status).toBe(200)
      expect(await health.json()).toEqual({ status: "ok", app: "example-host" })

      const url = base.replace(/^http/, "ws") + "/skein/rpc"
      const run = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const client = yield* makeSkeinClient({ url })
            const thread = yield* client.thread.create({ title: "embedded" })
            const run = yield* client.run.start({
              threadId: thread.id,
              provider: ProviderName.make("alpha"),
              message: "hello from the host",
              wait: true
            })
            const providers = yield* client.provider.list()
            const credential = yield* client.thread.toolCredential({ threadId: thread.id })
            return { run, providers: providers.map((p) => p.name), credential }
          })
        )
      )
      expect(run.run.status).toBe("completed")
      expect(run.providers).toEqual(expect.arrayContaining(["alpha", "beta"]))
      // Skein's tools on the host's router too, for a credential the RPC gave.
      expect(run.credential.url).toBeNull()
      const tools = new Client({ name: "host-test", version: "1.0.0" })
      await tools.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/skein/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${run.credential.token}` } }
        })
      )
      try {
        expect((await tools.listTools()).tools.map((t) => t.name)).toContain("spawn_subagent")
      } finally {
        await tools.close()
      }
      expect((await fetch(`${base}/skein/mcp`, { method: "POST", body: "{}" })).status).toBe(401)
    } finally {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    }
  }, 60_000)
})
