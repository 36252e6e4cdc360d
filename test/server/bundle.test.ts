/**
 * The `skein` executable as shipped: `bin/skein.js` running the bundle that
 * `packages/server/build.mjs` makes. Its help is the unbundled CLI's; a call works; a
 * client command loads the client's scripts only, never a chunk holding the runtime,
 * the adapters or SQLite, and never better-sqlite3, while the daemon does load them (so
 * the probe is seen to see); the code cache the build wrote is taken; and the scripted
 * provider's child program the daemon spawns is the bundled one.
 *
 * What was loaded comes from `SKEIN_TRACE_LOADING` (the scripts the bundle's loader
 * ran, and Node's CommonJS modules), and what each script holds from esbuild's
 * metafile (`dist/bundle/meta.json`).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { childEnv, runSkein, tempDir, trackDaemons } from "./support.js"

const start = trackDaemons()

const repository = fileURLToPath(new URL("../../", import.meta.url))
const bundleDir = Path.join(repository, "packages/server/dist/bundle")
const unbundledBin = Path.join(repository, "packages/server/dist/src/bin.js")

interface Meta {
  readonly outputs: Record<string, { readonly inputs: Record<string, unknown> }>
}
const meta = (): Meta => JSON.parse(Fs.readFileSync(Path.join(bundleDir, "meta.json"), "utf8")) as Meta

interface Trace {
  readonly scripts: ReadonlyArray<{ readonly file: string; readonly cache: string }>
  readonly commonJs: ReadonlyArray<string>
}

/** The sources (repository-relative) in a file of the bundle. */
const inputsOf = (file: string): Array<string> => {
  const output = meta().outputs[Path.relative(repository, file)]
  if (output === undefined) throw new Error(`${file} is not in the bundle's metafile`)
  return Object.keys(output.inputs)
}

/** Sources a command that only talks to a daemon must never load. */
const serverOnly = (input: string): boolean =>
  /^packages\/(runtime|adapters)\//.test(input) ||
  /node_modules\/(better-sqlite3|@effect\/sql)/.test(input) ||
  /^packages\/server\/dist\/src\/(Daemon|SkeinRuntime|Stdio|Demo|ServerCommands|WebSocketServer|RpcHandlers)\.js$/.test(
    input
  )

/** `skein ARGS` with the loader's trace; the trace is written when the process exits. */
const traced = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const file = Path.join(tempDir("skein-trace-"), "trace.json")
  const result = await runSkein(args, { ...env, SKEIN_TRACE_LOADING: file })
  const trace = JSON.parse(Fs.readFileSync(file, "utf8")) as Trace
  return { result, trace, inputs: trace.scripts.flatMap((s) => inputsOf(s.file)) }
}

describe("the bundled skein executable", () => {
  it("--help: the unbundled CLI's help, from scripts holding neither Effect, the runtime nor the RPC client", async () => {
    const home = tempDir("skein-bundle-help-")
    const { result, trace, inputs } = await traced(["--help"], childEnv(home))
    expect(result.code).toBe(0)
    for (const command of ["daemon", "stdio", "call", "send", "show", "follow", "fork", "merge-back", "demo"]) {
      expect(result.stdout).toContain(command)
    }
    const unbundled = spawnSync(process.execPath, [unbundledBin, "--help"], { env: childEnv(home), encoding: "utf8" })
    expect(unbundled.status).toBe(0)
    expect(result.stdout).toBe(unbundled.stdout)

    expect(trace.scripts.length).toBeGreaterThan(0)
    // Help is Skein's own text: not even Effect or @effect/cli is loaded for it.
    expect(inputs.some((input) => input.endsWith("packages/server/dist/src/Help.js"))).toBe(true)
    expect(inputs.filter((input) => /node_modules\/(effect|@effect\/cli)\//.test(input))).toEqual([])
    expect(inputs.filter(serverOnly)).toEqual([])
    // Help needs no connection: not even the client (ws, @effect/rpc) is loaded.
    expect(inputs.filter((input) => /node_modules\/(ws|@effect\/rpc)\//.test(input))).toEqual([])
    expect(trace.commonJs.filter((file) => file.includes("better-sqlite3"))).toEqual([])
    // The build's code cache is taken by the Node that built it.
    expect(trace.scripts.map((s) => s.cache)).toEqual(trace.scripts.map(() => "used"))
  }, 30_000)

  it("call provider.list against a daemon: works, loads the client and never the runtime or SQLite; the daemon does", async () => {
    const home = tempDir("skein-bundle-call-")
    const daemonTrace = Path.join(home, "daemon-trace.json")
    const d = await start(["--port", "0"], childEnv(home, { SKEIN_TRACE_LOADING: daemonTrace }))
    const env = childEnv(home, { SKEIN_URL: d.url })

    const { result, trace, inputs } = await traced(["call", "provider.list"], env)
    expect(result.code).toBe(0)
    const providers = JSON.parse(result.stdout) as Array<{ readonly name: string }>
    expect(providers.map((p) => p.name).sort()).toEqual(["alpha", "beta"])
    expect(inputs.some((input) => input.includes("node_modules/@effect/rpc/"))).toBe(true)
    expect(inputs.filter(serverOnly)).toEqual([])
    expect(trace.commonJs.filter((file) => file.includes("better-sqlite3"))).toEqual([])

    // A human command too.
    const created = await traced(["thread", "new", "--title", "bundled"], env)
    expect(created.result.code).toBe(0)
    expect(created.result.stdout.trim()).toMatch(/^thr_/)
    expect(created.inputs.filter(serverOnly)).toEqual([])

    // A run goes through the scripted provider's child program.
    const run = await runSkein(
      [
        "call",
        "run.start",
        JSON.stringify({ threadId: created.result.stdout.trim(), provider: "alpha", message: "hi", wait: true })
      ],
      env
    )
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout).status).toBe("completed")

    // The probe sees what it should: the daemon loaded the runtime and better-sqlite3.
    process.kill(d.child.pid!, "SIGTERM")
    expect((await d.exited).code).toBe(0)
    const daemon = JSON.parse(Fs.readFileSync(daemonTrace, "utf8")) as Trace
    const daemonInputs = daemon.scripts.flatMap((s) => inputsOf(s.file))
    expect(daemonInputs.some((input) => input.startsWith("packages/runtime/"))).toBe(true)
    expect(daemonInputs.some((input) => input.startsWith("packages/adapters/"))).toBe(true)
    expect(daemon.commonJs.some((file) => file.includes("better-sqlite3"))).toBe(true)
  }, 60_000)

  it("the scripted provider's child program is the bundle's own entry", () => {
    const chunk = Object.entries(meta().outputs).find(([, output]) =>
      Object.keys(output.inputs).some((input) => input.endsWith("adapters/dist/src/scripted/ScriptedAdapter.js"))
    )
    expect(chunk).toBeDefined()
    const chunkFile = Path.join(repository, chunk![0])
    expect(chunkFile.startsWith(bundleDir)).toBe(true)
    // How the adapter finds it (scriptedServerPath), from where the adapter's code lives.
    const resolved = createRequire(chunkFile).resolve("@skein/adapters/scripted-server")
    expect(resolved).toBe(Path.join(bundleDir, "node_modules/@skein/adapters/scripted-server.js"))
    expect(inputsOf(resolved).some((input) => input.endsWith("adapters/dist/src/scripted/main.js"))).toBe(true)
    // A self-contained ES module: it imports no chunk of the CLI's.
    expect(Fs.readFileSync(resolved, "utf8")).not.toMatch(/from "\.\.?\//)
  })
})
