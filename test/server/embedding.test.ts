/**
 * The embedding example host (packages/server/src/examples/HostServer.ts) as a child
 * process: its own route and Skein under /skein/rpc on one HTTP server.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
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
            return { run, providers: providers.map((p) => p.name) }
          })
        )
      )
      expect(run.run.status).toBe("completed")
      expect(run.providers).toEqual(expect.arrayContaining(["alpha", "beta"]))
    } finally {
      if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    }
  }, 60_000)
})
