/**
 * Skein as the client of an ACP agent, where the agents written by others never go: an
 * agent on the official SDK (mocks/TestAcpAgent.ts) reads and writes files through
 * Skein (inside the workspace only), asks for a terminal and for methods the protocol
 * lacks (JSON-RPC errors), calls Skein's own tools over the MCP server its session was
 * given, reports thoughts, tool calls, diffs and a plan (items; the thought never
 * reaches another provider), and writes hostile lines (the session lives on).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { ProviderName, RunView } from "@skein/domain"
import { Orchestrator } from "@skein/runtime"
import { serveWebSocket } from "@skein/server"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { removeDir, runtimeLayer, tempDir } from "../support/runtime.js"
import { replyOf } from "./suite.js"
import { repoRoot } from "./support.js"

const acp = "acp" as ProviderName
const alpha = "alpha" as ProviderName
const agentJs = Path.join(repoRoot(), "test", "dist", "agents", "mocks", "TestAcpAgent.js")

let dir: string
let workspace: string
let outside: string
let configFile: string

beforeAll(() => {
  dir = Fs.realpathSync(tempDir("skein-acp-client-"))
  workspace = Path.join(dir, "workspace")
  outside = Path.join(dir, "outside")
  Fs.mkdirSync(workspace)
  Fs.mkdirSync(outside)
  Fs.writeFileSync(Path.join(workspace, "inside.txt"), "the word is FERN\nline two\n")
  Fs.writeFileSync(Path.join(outside, "secret.txt"), "the word is OUTSIDE")
  Fs.symlinkSync(outside, Path.join(workspace, "escape"))
  configFile = Path.join(dir, "providers.json")
  Fs.writeFileSync(
    configFile,
    JSON.stringify({
      providers: {
        acp: { driver: "acp", command: [process.execPath, agentJs] },
        alpha: { driver: "scripted" }
      }
    })
  )
})

afterAll(() => removeDir(dir))

/** A runtime with the daemon's transport, so `/mcp` serves Skein's tools to the agent. */
const withServedRuntime = <A, E>(program: (o: Orchestrator["Type"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const runtime = yield* Layer.build(runtimeLayer(dir, { configFile }))
        yield* serveWebSocket({ port: 0 }).pipe(Effect.provide(runtime))
        return yield* program(yield* Effect.provide(Orchestrator, runtime))
      })
    )
  )

/** The outcome the agent reported on the line that starts with `prefix`. */
const lineOf = (run: RunView, prefix: string): string =>
  replyOf(run)
    .split("\n")
    .find((line) => line.startsWith(prefix)) ?? `no line ${prefix} in ${replyOf(run)}`

describe("acp driver: the client methods an agent calls", () => {
  it("files are read and written inside the workspace only; terminals and unknown methods are refused", () =>
    withServedRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace })
        const ask = (message: string) => o.startRun({ threadId: thread.id, provider: acp, message, wait: true })
        const reads = yield* ask(
          [
            `[[read:${Path.join(workspace, "inside.txt")}]]`,
            `[[read:${Path.join(outside, "secret.txt")}]]`,
            `[[read:${Path.join(workspace, "escape", "secret.txt")}]]`,
            `[[read:${Path.join(workspace, "..", "outside", "secret.txt")}]]`,
            `[[read:${Path.join(workspace, "missing.txt")}]]`,
            "[[read:/etc/passwd]]"
          ].join(" ")
        )
        expect(reads.status, JSON.stringify(reads.failure)).toBe("completed")
        expect(lineOf(reads, `read ${Path.join(workspace, "inside.txt")}`)).toContain('ok {"content":"the word is FERN')
        for (const refused of [
          Path.join(outside, "secret.txt"),
          Path.join(workspace, "escape", "secret.txt"),
          Path.join(workspace, "..", "outside", "secret.txt"),
          "/etc/passwd"
        ]) {
          const line = lineOf(reads, `read ${refused}`)
          expect(line).toMatch(/^read .*: refused .*(leaves the workspace|symlink)/)
          expect(line).not.toContain("OUTSIDE")
        }
        expect(lineOf(reads, `read ${Path.join(workspace, "missing.txt")}`)).toContain("does not exist")

        const writes = yield* ask(
          [
            `[[write:${Path.join(workspace, "notes", "new.txt")}=written by the agent]]`,
            `[[write:${Path.join(outside, "planted.txt")}=planted]]`,
            `[[write:${Path.join(workspace, "escape", "planted.txt")}=planted]]`
          ].join(" ")
        )
        expect(writes.status).toBe("completed")
        expect(lineOf(writes, `write ${Path.join(workspace, "notes", "new.txt")}`)).toContain("ok")
        expect(Fs.readFileSync(Path.join(workspace, "notes", "new.txt"), "utf8")).toBe("written by the agent")
        expect(lineOf(writes, `write ${Path.join(outside, "planted.txt")}`)).toContain("refused")
        expect(lineOf(writes, `write ${Path.join(workspace, "escape", "planted.txt")}`)).toContain("refused")
        expect(Fs.readdirSync(outside)).toEqual(["secret.txt"])

        const others = yield* ask("[[terminal]] [[ask:skein/anything]]")
        expect(others.status).toBe("completed")
        expect(lineOf(others, "terminal:")).toContain("Skein does not offer terminal/create")
        expect(lineOf(others, "ask skein/anything:")).toContain("Skein does not offer skein/anything")
      })
    ))

  it("the agent calls Skein's tools over the MCP server its session was given", () =>
    withServedRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace })
        const run = yield* o.startRun({ threadId: thread.id, provider: acp, message: "[[tools]]", wait: true })
        expect(run.status).toBe("completed")
        const line = lineOf(run, "tools:")
        expect(line).toMatch(/^tools: ok /)
        expect(line).toContain("alpha")
      })
    ))

  it("thoughts, tool calls, diffs and plans become items; the thought stays with its provider; hostile lines pass", () =>
    withServedRuntime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace })
        const shown = yield* o.startRun({
          threadId: thread.id,
          provider: acp,
          message: "[[show]] [[hostile]]",
          wait: true
        })
        expect(shown.status).toBe("completed")
        const items = shown.items.map(({ id: _id, threadId: _t, runId: _r, seq: _s, createdAt: _c, ...item }) => item)
        expect(items).toContainEqual({ type: "reasoning", text: "a secret thought" })
        expect(items).toContainEqual({
          type: "tool_call",
          name: "Edit notes.md",
          input: JSON.stringify({ file: "notes.md" }),
          output: "edited"
        })
        expect(items).toContainEqual({
          type: "file_change",
          path: "/w/notes.md",
          kind: "add",
          summary: "Edit notes.md"
        })
        expect(items).toContainEqual({
          type: "plan",
          steps: [
            { text: "look", status: "completed" },
            { text: "leap", status: "pending" }
          ]
        })
        expect(lineOf(shown, "hostile:")).toBe("hostile: sent")
        // The session lives on after the hostile lines.
        const after = yield* o.startRun({ threadId: thread.id, provider: acp, message: "still here", wait: true })
        expect(replyOf(after)).toContain("echo: still here")
        // Another provider hears what was done, never what was thought.
        const away = yield* o.startRun({ threadId: thread.id, provider: alpha, message: "what happened?", wait: true })
        expect(away.status).toBe("completed")
        const view = yield* o.getThread(thread.id)
        const handoff = view.handoffs.find((h) => h.id === away.contextHandoffId)
        expect(handoff?.summaryText).toContain("echo: still here")
        expect(JSON.stringify(handoff)).not.toContain("secret thought")
      })
    ))

  it("an agent that could not start at first is known by what it says once it does", async () => {
    // Fails its first start (as `npx` fetching a package might), starts after.
    const marker = Path.join(dir, "started-once")
    const script = Path.join(dir, "late-agent.sh")
    Fs.writeFileSync(
      script,
      `#!/bin/sh\nif [ -f "${marker}" ]; then exec "${process.execPath}" "${agentJs}"; fi\ntouch "${marker}"\necho "not yet" >&2\nexit 3\n`,
      { mode: 0o700 }
    )
    const lateConfig = Path.join(dir, "late.json")
    Fs.writeFileSync(
      lateConfig,
      JSON.stringify({ providers: { acp: { driver: "acp", command: ["/bin/sh", script] } } })
    )
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const runtime = yield* Layer.build(runtimeLayer(dir, { configFile: lateConfig, dbName: "late.db" }))
          const o = yield* Effect.provide(Orchestrator, runtime)
          const before = (yield* o.listProviders)[0]!
          expect(before.binary).toMatchObject({ usable: false })
          expect(before.binary?.problem).toContain("not yet")
          expect(before.capabilities.resume).toBe(false)
          const thread = yield* o.createThread({ workspace })
          const ran = yield* o.startRun({ threadId: thread.id, provider: acp, message: "hello", wait: true })
          expect(replyOf(ran)).toContain("echo: hello")
          const after = (yield* o.listProviders)[0]!
          expect(after.binary).toMatchObject({ usable: true, version: "1.0.0", problem: null })
          expect(after.capabilities.resume).toBe(true)
        })
      )
    )
  })
})
