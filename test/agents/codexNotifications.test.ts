/**
 * Which lines Codex writes to the driver. The driver asks Codex (initialize's
 * `optOutNotificationMethods`) not to send the notifications it never reads; this
 * checks, on the pinned binary, that the names are Codex's own and honoured: the
 * driver's process is started through a small launcher that copies everything Codex
 * writes to a file. A client that opts out of nothing else receives those same
 * notifications from the same binary, so the check can tell.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ProviderName } from "@skein/domain"
import { codexUnreadNotifications } from "@skein/adapters"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect } from "effect"
import { withRuntime } from "../support/runtime.js"
import { codexEnv, codexLauncher, lineClient } from "./support.js"
import { blockFixture, codexThroughLauncher, replyOf } from "./suite.js"

/** An executable that runs its arguments as a command and copies the command's stdout to `copy`. */
const writeTeeLauncher = (dir: string, copy: string): string => {
  const file = Path.join(dir, "tee-launcher.cjs")
  Fs.writeFileSync(
    file,
    [
      "#!/usr/bin/env node",
      'const { spawn } = require("node:child_process")',
      'const fs = require("node:fs")',
      "const [command, ...args] = process.argv.slice(2)",
      'const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })',
      `const copy = fs.createWriteStream(${JSON.stringify(copy)}, { flags: "a" })`,
      "process.stdin.pipe(child.stdin)",
      'child.stdout.on("data", (chunk) => { copy.write(chunk); process.stdout.write(chunk) })',
      'for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => child.kill(signal))',
      'child.on("exit", (code, signal) => copy.end(() => process.exit(code ?? (signal ? 1 : 0))))',
      ""
    ].join("\n")
  )
  Fs.chmodSync(file, 0o755)
  return file
}

/** The notification methods among messages (those with a method and no id). */
const notificationsAmong = (messages: ReadonlyArray<{ readonly id?: unknown; readonly method?: unknown }>) =>
  new Set(messages.filter((m) => m.id === undefined && typeof m.method === "string").map((m) => m.method as string))

/** The notification methods among JSON lines. */
const notificationMethods = (text: string): Set<string> =>
  notificationsAmong(
    text
      .split("\n")
      // The launcher also ran for the driver's `--version` probe, which prints a plain line.
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { readonly id?: unknown; readonly method?: unknown })
  )

/** One turn straight over the protocol, opting out of `optOut` only: the notifications Codex sent. */
const directTurn = async (dir: string, mockUrl: string, optOut: ReadonlyArray<string>): Promise<Set<string>> => {
  const codex = lineClient(
    codexLauncher,
    ["app-server"],
    { PATH: process.env.PATH ?? "/usr/bin:/bin", ...codexEnv(dir, mockUrl) },
    dir
  )
  try {
    await codex.call("initialize", {
      clientInfo: { name: "test", title: "test", version: "0" },
      capabilities: { experimentalApi: false, requestAttestation: false, optOutNotificationMethods: optOut }
    })
    codex.send({ method: "initialized" })
    const threadId = (await codex.call("thread/start", { cwd: dir })).result.thread.id as string
    const completed = codex.next((m) => m.method === "turn/completed")
    await codex.call("turn/start", { threadId, input: [{ type: "text", text: "hello", text_elements: [] }] })
    await completed
    return notificationsAmong(codex.seen)
  } finally {
    await codex.stop()
  }
}

describe("codex: the notifications the driver opts out of", () => {
  const { census, make } = blockFixture("codex")

  it("never reach the driver, while what it reads still does; without the opt-out Codex sends them", async () => {
    const fx = await make()
    const dir = fx.dir
    const copy = Path.join(dir, "codex-stdout.jsonl")
    const launcher = writeTeeLauncher(dir, copy)
    const configFile = codexThroughLauncher(fx, launcher, "tee-providers.json")
    const provider = "codex" as ProviderName
    await withRuntime(
      dir,
      (o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          const first = yield* o.startRun({ threadId: thread.id, provider, message: "one", wait: true })
          census.sample()
          const second = yield* o.startRun({ threadId: thread.id, provider, message: "two", wait: true })
          expect([first.status, second.status]).toEqual(["completed", "completed"])
          expect(replyOf(second)).toContain("ok: two")
          expect(second.usage?.outputTokens).toBeGreaterThan(0)
        }),
      { configFile }
    )
    const received = notificationMethods(Fs.readFileSync(copy, "utf8"))
    expect([...received].filter((method) => codexUnreadNotifications.includes(method))).toEqual([])
    for (const method of ["item/completed", "thread/tokenUsage/updated", "turn/completed"]) {
      expect(received).toContain(method)
    }
    // The same binary and mock, opting out of warnings only.
    const sent = await directTurn(dir, fx.mock.url, ["warning"])
    for (const method of ["turn/started", "item/started", "item/agentMessage/delta", "account/rateLimits/updated"]) {
      expect(codexUnreadNotifications).toContain(method)
      expect(sent).toContain(method)
    }
  }, 120_000)
})
