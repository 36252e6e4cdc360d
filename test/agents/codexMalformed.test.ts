/**
 * Lines on Codex's stdout that are not what the protocol says: the driver logs each and
 * carries on. The pinned binary is started through a small launcher that writes a burst
 * of malformed and stray lines before every line Codex writes, so they arrive in the
 * middle of real turns (between the `turn/start` reply, the items and `turn/completed`).
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderName } from "@skein/domain"
import { Orchestrator } from "@skein/runtime"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, Layer } from "effect"
import { captureLogs, runtimeLayer } from "../support/runtime.js"
import { blockFixture, codexThroughLauncher, replyOf } from "./suite.js"

/** Each with the warning it must leave (as logged); all are written before every line of Codex's. */
const hostile: ReadonlyArray<readonly [string, string]> = [
  ["this is not JSON", "not JSON"],
  // (The logger prints the message, then the value: an array as its elements.)
  ["[1, 2]", "skipping a message that is not an object 1,2"],
  ["42", "skipping a message that is not an object 42"],
  ['{"method": 42, "params": {}}', "skipping a malformed notification"],
  ['{"error": {"message": "no id"}}', "skipping a malformed error reply"],
  ['{"id": {"nested": true}, "result": {}}', "skipping a malformed reply"],
  [
    '{"method": "item/completed", "params": {"threadId": 7}}',
    "skipping a item/completed notification that does not decode"
  ],
  [
    '{"method": "turn/completed", "params": {"turn": "done"}}',
    "skipping a turn/completed notification that does not decode"
  ]
]
/** Stray but well formed: ignored without a word (a reply nobody waits for, a method the driver does not read, a turn of no thread it runs). */
const stray = [
  '{"id": 987654, "result": {"late": true}}',
  '{"id": 987655, "error": {"code": -1, "message": "late"}}',
  '{"method": "some/futureNotification", "params": {"x": 1}}',
  '{"method": "turn/completed", "params": {"threadId": "thr-nobody", "turn": {"id": "t", "status": "completed", "items": []}}}'
]

/** An executable that runs its arguments as a command, writing `lines` before each line of the command's stdout. */
const writeNoisyLauncher = (dir: string, lines: ReadonlyArray<string>): string => {
  const file = Path.join(dir, "noisy-launcher.cjs")
  Fs.writeFileSync(
    file,
    [
      "#!/usr/bin/env node",
      'const { spawn } = require("node:child_process")',
      "const [command, ...args] = process.argv.slice(2)",
      'const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })',
      `const noise = ${JSON.stringify(lines.map((l) => `${l}\n`).join(""))}`,
      'let buffer = ""',
      "process.stdin.pipe(child.stdin)",
      'child.stdout.setEncoding("utf8")',
      'child.stdout.on("data", (chunk) => {',
      "  buffer += chunk",
      '  let newline = buffer.indexOf("\\n")',
      "  while (newline >= 0) {",
      "    process.stdout.write(noise + buffer.slice(0, newline + 1))",
      "    buffer = buffer.slice(newline + 1)",
      '    newline = buffer.indexOf("\\n")',
      "  }",
      "})",
      'for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => child.kill(signal))',
      'child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)))',
      ""
    ].join("\n")
  )
  Fs.chmodSync(file, 0o755)
  return file
}

describe("codex: malformed and stray lines on the binary's stdout", () => {
  const { census, make } = blockFixture("codex")

  it("are logged or ignored, and never end the session: two turns complete, the second holding the first", async () => {
    const fx = await make()
    const dir = fx.dir
    const launcher = writeNoisyLauncher(dir, [...hostile.map(([line]) => line), ...stray])
    const configFile = codexThroughLauncher(fx, launcher, "noisy-providers.json")
    const provider = "codex" as ProviderName
    const logs = captureLogs()
    const turnsBefore = fx.turnRequests().length
    await Effect.runPromise(
      Effect.gen(function* () {
        const o = yield* Orchestrator
        const thread = yield* o.createThread({ workspace: dir })
        const first = yield* o.startRun({ threadId: thread.id, provider, message: "one", wait: true })
        census.sample()
        const second = yield* o.startRun({ threadId: thread.id, provider, message: "two", wait: true })
        expect([first.status, second.status]).toEqual(["completed", "completed"])
        const view = yield* o.getThread(thread.id)
        expect(replyOf(view.runs[1]!)).toContain("ok: two")
      }).pipe(Effect.provide(Layer.merge(runtimeLayer(dir, { configFile }), logs.layer)))
    )
    // The second turn went to the same Codex thread: the model saw the first turn in it.
    const turns = fx.turnRequests(turnsBefore)
    expect(turns).toHaveLength(2)
    expect(fx.allInputText(turns[1]!)).toContain("one")
    for (const [line, warning] of hostile) {
      expect(
        logs.lines.some((logged) => logged.includes(warning)),
        `no warning "${warning}" for ${line}`
      ).toBe(true)
    }
    // Every burst of noise left one warning per hostile line (the one non-JSON line counts
    // the bursts), and the stray lines none of their own.
    const warnings = logs.lines.filter((logged) => logged.startsWith("WARN codex: "))
    const bursts = warnings.filter((logged) => logged.includes("not JSON")).length
    expect(bursts).toBeGreaterThan(0)
    expect(warnings).toHaveLength(hostile.length * bursts)
  }, 120_000)
})
