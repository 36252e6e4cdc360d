/**
 * `npm run bench`: every figure the issues ask for, printed, never asserted. Each
 * figure comes with a baseline measured in the same run where one makes sense, since
 * these machines are shared and noisy.
 *
 * With no argument (or several), each suite runs in a Node process of its own, so one
 * suite's heap (the actors suite leaves 10,000 threads' worth of garbage) and JIT state
 * do not colour the next; `main.js NAME` runs one suite in this process.
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const suites: ReadonlyArray<[string, () => Promise<{ run: () => Promise<void> }>]> = [
  ["store", () => import("./store.js")],
  ["actors", () => import("./actors.js")],
  ["context", () => import("./context.js")],
  ["server", () => import("./server.js")],
  ["threads", () => import("./threads.js")],
  ["lineage", () => import("./lineage.js")],
  ["checkpoints", () => import("./checkpoints.js")],
  ["agents", () => import("./agents.js")],
  ["cli", () => import("./cli.js")],
  ["tools", () => import("./tools.js")],
  ["acp", () => import("./acp.js")],
  ["acpDriver", () => import("./acpDriver.js")],
  ["telemetry", () => import("./telemetry.js")],
  ["redesign", () => import("./redesign.js")],
  ["inspector", () => import("./inspector.js")],
  ["cluster", () => import("./cluster.js")]
]

const requested = process.argv.slice(2)
const unknown = requested.filter((name) => !suites.some(([suite]) => suite === name))
if (unknown.length > 0) {
  console.error(`unknown bench suite(s): ${unknown.join(", ")}; known: ${suites.map(([name]) => name).join(", ")}`)
  process.exit(2)
}
const selected = suites.filter(([name]) => requested.length === 0 || requested.includes(name))

if (selected.length === 1) {
  const [name, load] = selected[0]!
  const started = Date.now()
  await (await load()).run()
  console.log(`(${name}: ${((Date.now() - started) / 1000).toFixed(1)} s)\n`)
} else {
  let failed = 0
  for (const [name] of selected) {
    const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), name], {
      stdio: "inherit"
    })
    if (child.status !== 0) {
      failed++
      console.error(`bench suite ${name} failed (${child.signal ?? `exit ${child.status}`})\n`)
    }
  }
  process.exit(failed === 0 ? 0 : 1)
}
