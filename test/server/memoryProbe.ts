/**
 * How much memory a Skein child process retains, measured from inside it: a preload
 * (`--expose-gc --import PROBE`) that, on SIGUSR2, runs two full garbage collections
 * and writes `process.memoryUsage()` as one stderr line.
 *
 * Why the heap after a full GC: it is what the process still references (a leak
 * grows it), while RSS also counts pages V8 and the allocator keep after freeing, so
 * it stays high after large frames without anything leaking. `external` counts the
 * Buffers behind WebSocket frames and lines, so frames held on to would show there.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"

export interface MemorySample {
  readonly heapUsed: number
  readonly external: number
  readonly rss: number
}

const MARK = "skein-memory-probe "

/** Writes the preload into `dir`; returns the node arguments that load it. */
export const memoryProbeArgs = (dir: string): Array<string> => {
  const file = Path.join(dir, "memory-probe.mjs")
  Fs.writeFileSync(
    file,
    [
      `let samples = 0`,
      `process.on("SIGUSR2", () => {`,
      `  globalThis.gc(); globalThis.gc()`,
      `  const m = process.memoryUsage()`,
      `  const sample = { heapUsed: m.heapUsed, external: m.external, rss: m.rss }`,
      `  process.stderr.write(${JSON.stringify(MARK)} + ++samples + " " + JSON.stringify(sample) + "\\n")`,
      `})`
    ].join("\n")
  )
  return ["--expose-gc", "--import", pathToFileURL(file).href]
}

/** Samples taken so far, by pid: the probe numbers its lines. */
const taken = new Map<number, number>()

/** Signals `pid` and waits (bounded) for the sample it writes on the stderr that `stderr()` returns. */
export const sampleMemory = async (pid: number, stderr: () => string, timeoutMs = 10_000): Promise<MemorySample> => {
  const n = (taken.get(pid) ?? 0) + 1
  const mark = `${MARK}${n} `
  process.kill(pid, "SIGUSR2")
  const deadline = Date.now() + timeoutMs
  while (!stderr().includes(mark)) {
    if (Date.now() > deadline) throw new Error(`no memory sample from pid ${pid} within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
  taken.set(pid, n)
  const text = stderr()
  return JSON.parse(text.slice(text.lastIndexOf(mark) + mark.length).split("\n")[0]!) as MemorySample
}

export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
