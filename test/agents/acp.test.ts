/**
 * The `acp` driver end to end, through the Orchestrator, against two ACP agents written
 * by others, pinned and offline: `claude-agent-acp` over the pinned Claude Code and the
 * Messages mock, `codex-acp` over the pinned Codex and the Responses mock. On each: two
 * turns, a switch to a scripted instance and back (recall asserted on the mock's
 * captured request), native resume after a restart of Skein, a native fork, a cancel, the
 * agent killed mid-prompt, a permission request answered. After each block no process it started is alive (by PID).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { ProviderName, ThreadId } from "@skein/domain"
import type { Orchestrator } from "@skein/runtime"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { removeDir, tempDir, withRuntime } from "../support/runtime.js"
import type { MockServer } from "./mocks/MockServer.js"
import * as Messages from "./mocks/MessagesMock.js"
import * as Responses from "./mocks/ResponsesMock.js"
import { replyOf, untilRun } from "./suite.js"
import {
  acpAgents,
  claudeEnv,
  claudeExecutable,
  codexEnv,
  codexExecutable,
  descendants,
  requireBinaries,
  waitUntil
} from "./support.js"

type O = Orchestrator["Type"]
type Kind = "claude" | "codex"

const acp = "acp" as ProviderName
const alpha = "alpha" as ProviderName

/** The processes under this one that belong to an ACP agent: the agent's Node and what it started. */
const agentProcesses = (): Array<number> =>
  descendants().filter((pid) => {
    try {
      const cmdline = Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
      return cmdline.includes("-acp/dist/index.js") || cmdline.includes(codexExecutable) || cmdline.includes("claude")
    } catch {
      return false
    }
  })

const alive = (pid: number): boolean => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

const acpSuite = (kind: Kind) => {
  const api = kind === "claude" ? Messages : Responses
  let mock: MockServer
  let dir: string
  let configFile: string
  const seen = new Set<number>()
  const sample = () => agentProcesses().forEach((pid) => seen.add(pid))
  const deadlines = { openMs: 60_000, callMs: 30_000, firstEventMs: 60_000, idleMs: 60_000, interruptMs: 10_000 }
  const run = <A, E>(program: (o: O) => Effect.Effect<A, E>, dbName = "skein.db") =>
    withRuntime(dir, (o) => program(o), { configFile, dbName, deadlines, interruptGraceMs: 3_000 })
  /** The model requests of turns (claude-agent-acp also asks the model for a session title). */
  const turnRequests = (from = 0) =>
    mock.requests.slice(from).filter((r) => api.isTurnRequest(r) && !api.latestPrompt(r).includes("Write the title"))
  const requestWith = (text: string, from = 0) =>
    turnRequests(from)
      .filter((r) => api.latestPrompt(r).includes(text))
      .at(-1)
  const seenBy = (text: string, from = 0) => {
    const request = requestWith(text, from)
    expect(request, `a model request whose prompt holds ${text}`).toBeDefined()
    return api.allInputText(request!)
  }

  describe(`acp driver: ${kind === "claude" ? "claude-agent-acp" : "codex-acp"}`, () => {
    beforeAll(async () => {
      requireBinaries()
      dir = Fs.realpathSync(tempDir(`skein-acp-${kind}-`))
      mock =
        kind === "claude"
          ? await Messages.startMessagesMock({ logFile: Path.join(dir, "mock-requests.jsonl") })
          : await Responses.startResponsesMock({ logFile: Path.join(dir, "mock-requests.jsonl") })
      const instance =
        kind === "claude"
          ? {
              driver: "acp",
              command: [acpAgents.node, acpAgents.claude],
              env: { ...claudeEnv(dir, mock.url), CLAUDE_CODE_EXECUTABLE: claudeExecutable },
              // The agent's own default mode asks the model about permissions: offline, ask the client.
              configOptions: { mode: "default" }
            }
          : {
              driver: "acp",
              command: [acpAgents.node, acpAgents.codex],
              env: { ...codexEnv(dir, mock.url), CODEX_PATH: codexExecutable },
              // Read-only, asking (`on-request`) before anything runs outside the sandbox.
              configOptions: { mode: "read-only" }
            }
      configFile = Path.join(dir, "providers.json")
      Fs.writeFileSync(configFile, JSON.stringify({ providers: { acp: instance, alpha: { driver: "scripted" } } }))
    })
    afterAll(async () => {
      await mock?.close()
      expect(seen.size).toBeGreaterThan(0)
      const ended = await waitUntil(() => [...seen].every((pid) => !alive(pid)), 10_000)
      expect(ended ? [] : [...seen].filter(alive)).toEqual([])
      removeDir(dir)
    })

    it("two turns on one ACP session: the second request holds the first; capabilities come from initialize", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          const first = yield* o.startRun({
            threadId: thread.id,
            provider: acp,
            message: "the colour is TEAL",
            wait: true
          })
          sample()
          const second = yield* o.startRun({
            threadId: thread.id,
            provider: acp,
            message: "and the shape?",
            wait: true
          })
          expect([first.status, second.status], JSON.stringify([first.failure, second.failure])).toEqual([
            "completed",
            "completed"
          ])
          expect(replyOf(first)).toContain("ok: the colour is TEAL")
          expect(replyOf(second)).toContain("ok: and the shape?")
          expect(second.contextResolution).toBe("none")
          expect(second.usage?.inputTokens).toBeGreaterThanOrEqual(100)
          expect(seenBy("and the shape?")).toContain("the colour is TEAL")
          const view = yield* o.getThread(thread.id)
          expect(view.providerThreads).toHaveLength(1)
          expect(view.providerThreads[0]!.coverage.nativeRunOrdinals).toEqual([1, 2])
          const [info] = (yield* o.listProviders).filter((p) => p.name === acp)
          expect(info!.driver).toBe("acp")
          expect(info!.capabilities).toMatchObject({ resume: true, fork: "latest", rollback: "none", steer: false })
          expect(info!.binary).toMatchObject({ usable: true, version: kind === "claude" ? "0.101.0" : "2.6.0" })
        })
      )
    })

    it("a switch to a scripted instance and back: the ACP agent is told what it missed", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          yield* o.startRun({ threadId: thread.id, provider: acp, message: "the river is NILE", wait: true })
          sample()
          const away = yield* o.startRun({
            threadId: thread.id,
            provider: alpha,
            message: "the animal is OTTER",
            wait: true
          })
          expect(away.status).toBe("completed")
          const from = mock.requests.length
          const back = yield* o.startRun({ threadId: thread.id, provider: acp, message: "which animal?", wait: true })
          expect(back.status).toBe("completed")
          expect(back.contextResolution).toBe("delta")
          const heard = seenBy("which animal?", from)
          // The native session holds run 1; the handoff brought run 2.
          expect(heard).toContain("the river is NILE")
          expect(heard).toContain("the animal is OTTER")
          expect(heard).toContain("<skein_handoff")
          const view = yield* o.getThread(thread.id)
          expect(view.runs.find((r) => r.provider === acp && r.ordinal === 3)?.providerThreadId).toBe(
            view.runs[0]!.providerThreadId
          )
        })
      )
    })

    it("a restart of Skein between runs resumes the ACP session natively", async () => {
      const db = "restart.db"
      const threadId: ThreadId = await run(
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ workspace: dir })
            yield* o.startRun({ threadId: thread.id, provider: acp, message: "the city is OSLO", wait: true })
            sample()
            return thread.id
          }),
        db
      )
      await run(
        (o) =>
          Effect.gen(function* () {
            const after = yield* o.startRun({ threadId, provider: acp, message: "which city?", wait: true })
            sample()
            expect(after.status).toBe("completed")
            expect(after.contextResolution).toBe("none")
            const view = yield* o.getThread(threadId)
            expect(view.providerThreads).toHaveLength(1)
            expect(view.providerThreads[0]!.coverage.nativeRunOrdinals).toEqual([1, 2])
            expect(seenBy("which city?")).toContain("the city is OSLO")
          }),
        db
      )
    })

    it("a fork at the latest run is native (session/fork); the fork hears the source, the source not the fork", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const source = yield* o.createThread({ workspace: dir })
          const last = yield* o.startRun({
            threadId: source.id,
            provider: acp,
            message: "the stone is JADE",
            wait: true
          })
          sample()
          const { thread: fork } = yield* o.forkThread({ sourceThreadId: source.id, sourcePoint: { runId: last.id } })
          const onFork = yield* o.startRun({ threadId: fork.id, provider: acp, message: "on the fork now", wait: true })
          expect(onFork.status).toBe("completed")
          expect(onFork.contextResolution).toBe("native")
          const [forkView, sourceView] = [yield* o.getThread(fork.id), yield* o.getThread(source.id)]
          expect(forkView.transfers.find((t) => t.type === "fork")?.resolution?.strategy).toBe("native_fork")
          expect(forkView.providerThreads[0]!.nativeRef).not.toBe(sourceView.providerThreads[0]!.nativeRef)
          const heard = seenBy("on the fork now")
          expect(heard).toContain("the stone is JADE")
          expect(heard).not.toContain("<skein_handoff")
          yield* o.startRun({ threadId: source.id, provider: acp, message: "source again", wait: true })
          expect(seenBy("source again")).not.toContain("on the fork now")
        })
      )
    })

    it("a cancel mid-prompt ends the run interrupted; the next run on the session completes", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          const from = mock.requests.length
          yield* o.startRun({ threadId: thread.id, provider: acp, message: "think long [[slow:20000]]" })
          yield* Effect.promise(() => mock.waitFor((r) => api.latestPrompt(r).includes("[[slow:20000]]"), 60_000, from))
          sample()
          const t0 = Date.now()
          const stopped = yield* o.interruptRun({ threadId: thread.id })
          expect(stopped.status).toBe("interrupted")
          expect(Date.now() - t0).toBeLessThan(5_000)
          const after = yield* o.startRun({ threadId: thread.id, provider: acp, message: "still there?", wait: true })
          expect(after.status).toBe("completed")
          expect(replyOf(after)).toContain("ok: still there?")
        })
      )
    })

    it("the agent killed mid-prompt fails the run as a crash; the next run resumes the session natively", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          yield* o.startRun({ threadId: thread.id, provider: acp, message: "the fruit is KIWI", wait: true })
          const from = mock.requests.length
          yield* o.startRun({ threadId: thread.id, provider: acp, message: "slowly [[slow:20000]]" })
          yield* Effect.promise(() => mock.waitFor((r) => api.latestPrompt(r).includes("slowly"), 60_000, from))
          sample()
          const killed = agentProcesses().filter(alive)
          expect(killed.length).toBeGreaterThan(0)
          for (const pid of killed) process.kill(pid, "SIGKILL")
          const failed = yield* untilRun(o, thread.id, (r) => r.status === "failed", 30_000)
          expect(failed.failure?.reason).toBe("provider_crash")
          const again = yield* o.startRun({ threadId: thread.id, provider: acp, message: "which fruit?", wait: true })
          sample()
          expect(again.status).toBe("completed")
          expect((yield* o.getThread(thread.id)).providerThreads).toHaveLength(1)
          expect(seenBy("which fruit?")).toContain("the fruit is KIWI")
        })
      )
    })

    it("a permission request is an approval: accepted, the command ran; declined, it did not", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: dir })
          for (const [decision, file] of [
            ["accept", "accepted.txt"],
            ["decline", "declined.txt"]
          ] as const) {
            const target = Path.join(dir, file)
            // codex-acp's Codex asks only for a command that wants out of its sandbox.
            const directive = kind === "claude" ? "cmd" : "askcmd"
            yield* o.startRun({
              threadId: thread.id,
              provider: acp,
              message: `please [[${directive}:touch ${target}]]`
            })
            const waiting = yield* untilRun(
              o,
              thread.id,
              (r) => r.items.some((i) => i.type === "approval_request" && i.status === "open"),
              60_000
            )
            sample()
            const request = waiting.items.find((i) => i.type === "approval_request")!
            if (request.type !== "approval_request") throw new Error("unreachable")
            expect(request.question).toContain("touch")
            const answered = yield* o.respondApproval({ threadId: thread.id, approvalId: request.approvalId, decision })
            expect(answered.type === "approval_request" && answered.status).toBe(decision)
            const done = yield* untilRun(o, thread.id, (r) => r.status !== "running" && r.status !== "queued", 60_000)
            // codex-acp offers one refusal for a command, "No, and tell Codex what to do
            // differently": Codex ends the turn on it, and the prompt stops `cancelled`.
            const ended = decision === "decline" && kind === "codex" ? "interrupted" : "completed"
            expect(done.status, `${decision}: ${JSON.stringify(done.items)}`).toBe(ended)
            const exists = yield* Effect.promise(() =>
              waitUntil(() => Fs.existsSync(target), decision === "accept" ? 5_000 : 0)
            )
            expect(exists, `${decision}: ${JSON.stringify(done.items)}`).toBe(decision === "accept")
          }
        })
      )
    })
  })
}

acpSuite("claude")
acpSuite("codex")
