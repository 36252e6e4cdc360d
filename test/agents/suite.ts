/**
 * The end-to-end suite each real agent passes, through the Orchestrator (actors,
 * SQLite, the driver, the real binary, a mock model server that records every
 * request): two turns, an interrupt mid-turn, two threads' turns at once on one
 * session (an interrupt of one, a kill under both), an approval accepted and one
 * declined, a kill mid-turn, a restart of Skein between runs, a native fork at run 1
 * of 2 and a rollback of the last run (through the runtime, and through the adapter).
 * Assertions about what the model saw are made on the mock's captured requests. After
 * the suite, no process it started is alive (by PID).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { ProviderEvent, ProviderName, RunView, ThreadId, TurnInput } from "@skein/domain"
import { makeId, ProviderRegistry } from "@skein/domain"
import { providerRegistryLayer, TurnEvents } from "@skein/adapters"
import type { Orchestrator } from "@skein/runtime"
import { Effect, Scope, Exit } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { startHost } from "../support/hostProcess.js"
import { removeDir, tempDir, withRuntime } from "../support/runtime.js"
import type { CapturedRequest, MockServer } from "./mocks/MockServer.js"
import {
  claudeEnv,
  claudePlaceholder,
  codexEnv,
  codexLauncher,
  descendants,
  exeOf,
  processCensus,
  requireBinaries,
  waitUntil
} from "./support.js"
import * as Responses from "./mocks/ResponsesMock.js"
import * as Messages from "./mocks/MessagesMock.js"

export type AgentKind = "codex" | "claude"

type O = Orchestrator["Type"]

export interface AgentFixture {
  readonly kind: AgentKind
  readonly mock: MockServer
  readonly dir: string
  readonly configFile: string
  /** Model requests of turns (not other endpoints), in order. */
  readonly turnRequests: (from?: number) => Array<CapturedRequest>
  readonly latestPrompt: (request: CapturedRequest) => string
  readonly allInputText: (request: CapturedRequest) => string
}

/** A mock, a directory and a config file naming one instance of `kind` (plus `extra` instances). */
export const makeFixture = async (
  kind: AgentKind,
  options: {
    readonly mock?: MockServer
    readonly instance?: Record<string, unknown>
    readonly extra?: Record<string, unknown>
  } = {}
): Promise<AgentFixture> => {
  requireBinaries()
  const dir = Fs.realpathSync(tempDir(`skein-${kind}-`))
  const log = Path.join(dir, `${kind}-mock-requests.jsonl`)
  const mock =
    options.mock ??
    (kind === "codex"
      ? await Responses.startResponsesMock({ logFile: log })
      : await Messages.startMessagesMock({ logFile: log }))
  const api = kind === "codex" ? Responses : Messages
  const instance =
    kind === "codex"
      ? {
          driver: "codex",
          command: [codexLauncher],
          env: codexEnv(dir, mock.url),
          askForApproval: "untrusted",
          sandbox: "read-only"
        }
      : { driver: "claude", command: [claudePlaceholder], env: claudeEnv(dir, mock.url) }
  const configFile = Path.join(dir, "providers.json")
  Fs.writeFileSync(
    configFile,
    JSON.stringify({ providers: { [kind]: { ...instance, ...options.instance }, ...options.extra } }, null, 2)
  )
  return {
    kind,
    mock,
    dir,
    configFile,
    turnRequests: (from = 0) => mock.requests.slice(from).filter(api.isTurnRequest),
    latestPrompt: api.latestPrompt,
    allInputText: api.allInputText
  }
}

/** Both agents' mocks, one directory, and a config file naming instances on them. */
export interface CrossFixture {
  readonly dir: string
  readonly responses: MockServer
  readonly messages: MockServer
  readonly configFile: string
}

/**
 * A `CrossFixture` whose config holds what `instances` makes of a Codex and a Claude Code
 * instance on the mocks (and the directory, for instances of its own).
 */
export const makeCrossFixture = async (
  prefix: string,
  instances: (base: {
    readonly codex: Record<string, unknown>
    readonly claude: Record<string, unknown>
    readonly dir: string
  }) => Record<string, unknown>
): Promise<CrossFixture> => {
  requireBinaries()
  const dir = Fs.realpathSync(tempDir(prefix))
  const responses = await Responses.startResponsesMock({ logFile: Path.join(dir, "codex-mock-requests.jsonl") })
  const messages = await Messages.startMessagesMock({ logFile: Path.join(dir, "claude-mock-requests.jsonl") })
  const configFile = Path.join(dir, "providers.json")
  const codex = { driver: "codex", command: [codexLauncher], env: codexEnv(dir, responses.url) }
  const claude = { driver: "claude", command: [claudePlaceholder], env: claudeEnv(dir, messages.url) }
  Fs.writeFileSync(configFile, JSON.stringify({ providers: instances({ codex, claude, dir }) }))
  return { dir, responses, messages, configFile }
}

/** After the block: the mocks closed, no process the census saw left (by PID), the directory gone. */
export const closeCrossFixture = async (
  fx: CrossFixture | undefined,
  census: ReturnType<typeof processCensus>
): Promise<void> => {
  await fx?.responses.close()
  await fx?.messages.close()
  const ended = await waitUntil(() => census.leftovers().length === 0, 10_000)
  expect(ended ? [] : census.leftovers()).toEqual([])
  if (fx !== undefined) removeDir(fx.dir)
}

/**
 * For a describe block of its own: one fixture, made by the block's test, and a census
 * of the processes the block starts. After the block its mock is closed and no process
 * it started is left (by PID).
 */
export const blockFixture = (kind: AgentKind) => {
  let fx: AgentFixture | undefined
  const census = processCensus()
  afterAll(async () => {
    if (fx === undefined) return
    await fx.mock.close()
    const ended = await waitUntil(() => census.leftovers().length === 0, 10_000)
    expect(ended ? [] : census.leftovers()).toEqual([])
  })
  return { census, make: async () => (fx = await makeFixture(kind)) }
}

/** A config file (`name` in the fixture's directory) naming one Codex instance that runs the pinned binary through `launcher`. */
export const codexThroughLauncher = (fx: AgentFixture, launcher: string, name: string): string => {
  const configFile = Path.join(fx.dir, name)
  Fs.writeFileSync(
    configFile,
    JSON.stringify({
      providers: { codex: { driver: "codex", command: [launcher, codexLauncher], env: codexEnv(fx.dir, fx.mock.url) } }
    })
  )
  return configFile
}

export const replyOf = (run: RunView): string =>
  run.items
    .filter((i) => i.type === "assistant_message")
    .map((i) => ("text" in i ? i.text : ""))
    .join("\n")

/** Polls the thread until `check` holds for its last run. */
export const untilRun = (o: O, threadId: ThreadId, check: (run: RunView) => boolean, timeoutMs = 30_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      const view = yield* o.getThread(threadId)
      const run = view.runs[view.runs.length - 1]
      if (run !== undefined && check(run)) return run
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error("the run never reached the expected state"))
  })

export const agentSuite = (kind: AgentKind) => {
  const provider = kind as ProviderName
  let fx: AgentFixture
  const census = processCensus()
  const deadlines = { openMs: 60_000, callMs: 30_000, firstEventMs: 60_000, idleMs: 60_000, interruptMs: 10_000 }
  const run = <A, E>(program: (o: O) => Effect.Effect<A, E>, dbName = "skein.db") =>
    withRuntime(fx.dir, (o) => program(o), { configFile: fx.configFile, dbName, deadlines, interruptGraceMs: 3_000 })
  /** The agent's processes alive now, among those the suite has seen. */
  const agentPids = () =>
    census.seen().filter((pid) => {
      try {
        return Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(kind === "codex" ? "app-server" : "stream-json")
      } catch {
        return false
      }
    })
  /** A run on each of two threads, started at once (with `wait`, each to its end). */
  const runsAtOnce = (
    o: O,
    [one, first]: readonly [ThreadId, string],
    [other, second]: readonly [ThreadId, string],
    wait = false
  ) =>
    Effect.all(
      [
        o.startRun({ threadId: one, provider, message: first, wait }),
        o.startRun({ threadId: other, provider, message: second, wait })
      ],
      { concurrency: "unbounded" }
    )
  /** Until the mock has had a request whose prompt holds each of `texts`. */
  const promptsSeen = (texts: ReadonlyArray<string>, from: number) =>
    Effect.promise(() =>
      Promise.all(texts.map((text) => fx.mock.waitFor((r) => fx.latestPrompt(r).includes(text), 30_000, from)))
    )
  /** The newest model request whose prompt contains `text`. */
  const requestWith = (text: string, from = 0) =>
    fx
      .turnRequests(from)
      .filter((r) => fx.latestPrompt(r).includes(text))
      .at(-1)

  describe(`${kind}: the real binary through Skein`, () => {
    beforeAll(async () => {
      fx = await makeFixture(kind)
    })
    afterAll(async () => {
      if (fx === undefined) return
      await fx.mock.close()
      // Every process a test started has ended with its runtime (its group included).
      expect(census.seen().length).toBeGreaterThan(0)
      const ended = await waitUntil(() => census.leftovers().length === 0, 10_000)
      expect(ended ? [] : census.leftovers()).toEqual([])
      removeDir(fx.dir)
    })

    it("two turns: the second request holds the first natively; provider.list shows the binary", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: fx.dir })
          const first = yield* o.startRun({ threadId: thread.id, provider, message: "the colour is TEAL", wait: true })
          census.sample()
          const second = yield* o.startRun({ threadId: thread.id, provider, message: "and the shape?", wait: true })
          expect([first.status, second.status]).toEqual(["completed", "completed"])
          expect(replyOf(first)).toContain("ok: the colour is TEAL")
          expect(replyOf(second)).toContain("ok: and the shape?")
          expect(second.contextResolution).toBe("none")
          // What each turn cost, as the binary counted it from the mock's answer (which
          // reports 100 + n input tokens and 7 output tokens), kept on the run.
          for (const ended of [first, second]) {
            expect(ended.usage?.inputTokens).toBeGreaterThanOrEqual(100)
            expect(ended.usage?.outputTokens).toBeGreaterThan(0)
          }
          expect((yield* o.getThread(thread.id)).runs.map((r) => r.usage)).toEqual([first.usage, second.usage])
          const request = requestWith("and the shape?")!
          expect(fx.allInputText(request)).toContain("the colour is TEAL")
          const view = yield* o.getThread(thread.id)
          expect(view.providerThreads).toHaveLength(1)
          expect(view.providerThreads[0]!.coverage.nativeRunOrdinals).toEqual([1, 2])
          const [info] = (yield* o.listProviders).filter((p) => p.name === kind)
          expect(info!.binary).toMatchObject({ usable: true, problem: null })
          expect(info!.binary!.version).toBe(kind === "codex" ? "0.171.0" : "2.1.332")
          // The npm launcher / placeholder was followed to the platform package's executable.
          expect(info!.binary!.path).toContain(
            kind === "codex" ? "@openai/codex-linux" : "@anthropic-ai/claude-code-linux"
          )
        })
      )
    })

    it("an interrupt mid-turn ends the run interrupted; the next run on the thread completes", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: fx.dir })
          const started = fx.mock.requests.length
          yield* o.startRun({ threadId: thread.id, provider, message: "think long [[slow:20000]]" })
          yield* Effect.promise(() =>
            fx.mock.waitFor((r) => fx.latestPrompt(r).includes("[[slow:20000]]"), 30_000, started)
          )
          census.sample()
          const t0 = Date.now()
          const stopped = yield* o.interruptRun({ threadId: thread.id })
          expect(stopped.status).toBe("interrupted")
          expect(Date.now() - t0).toBeLessThan(3_000)
          const after = yield* o.startRun({ threadId: thread.id, provider, message: "still there?", wait: true })
          expect(after.status).toBe("completed")
          expect(replyOf(after)).toContain("ok: still there?")
        })
      )
    })

    it("two threads in one workspace at once: each turn hears only its own thread; interrupting one leaves the other", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const [a, b] = yield* Effect.all([
            o.createThread({ workspace: fx.dir }),
            o.createThread({ workspace: fx.dir })
          ])
          const from = fx.mock.requests.length
          // Both turns in flight at once, on the same instance and workspace.
          yield* runsAtOnce(o, [a.id, "the fruit is APPLE [[slow:3000]]"], [b.id, "the fruit is BANANA [[slow:3000]]"])
          yield* promptsSeen(["APPLE", "BANANA"], from)
          census.sample()
          const runsOf = (threadId: ThreadId) => Effect.map(o.getThread(threadId), (view) => view.runs)
          expect((yield* runsOf(a.id)).map((r) => r.status)).toEqual(["running"])
          expect((yield* runsOf(b.id)).map((r) => r.status)).toEqual(["running"])
          // One session of the instance serves both threads of the workspace.
          const [info] = (yield* o.listProviders).filter((p) => p.name === kind)
          expect(info!.sessions.map((s) => s.workspace)).toEqual([fx.dir])
          const stopped = yield* o.interruptRun({ threadId: a.id })
          expect(stopped.status).toBe("interrupted")
          const other = yield* untilRun(o, b.id, (r) => r.status !== "running" && r.status !== "queued")
          expect(other.status).toBe("completed")
          expect(replyOf(other)).toContain("ok: the fruit is BANANA")
          // Again at once, to the end: each thread's next request holds its own history only.
          const [nextA, nextB] = yield* runsAtOnce(o, [a.id, "which fruit, A?"], [b.id, "which fruit, B?"], true)
          expect([nextA.status, nextB.status]).toEqual(["completed", "completed"])
          expect(replyOf(nextA)).toContain("ok: which fruit, A?")
          expect(replyOf(nextB)).toContain("ok: which fruit, B?")
          expect([nextA.contextResolution, nextB.contextResolution]).toEqual(["none", "none"])
          const seenByA = fx.allInputText(requestWith("which fruit, A?", from)!)
          const seenByB = fx.allInputText(requestWith("which fruit, B?", from)!)
          expect(seenByA).toContain("APPLE")
          expect(seenByA).not.toContain("BANANA")
          expect(seenByB).toContain("BANANA")
          expect(seenByB).not.toContain("APPLE")
        })
      )
    })

    it("an approval accepted and one declined, answered with approval.respond", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: fx.dir })
          for (const [decision, file] of [
            ["accept", "accepted.txt"],
            ["decline", "declined.txt"]
          ] as const) {
            const target = Path.join(fx.dir, file)
            yield* o.startRun({ threadId: thread.id, provider, message: `please [[cmd:touch ${target}]]` })
            const waiting = yield* untilRun(o, thread.id, (r) =>
              r.items.some((i) => i.type === "approval_request" && i.status === "open")
            )
            census.sample()
            const request = waiting.items.find((i) => i.type === "approval_request")!
            expect(request.type === "approval_request" && request.question).toContain(`touch ${target}`)
            if (request.type !== "approval_request") throw new Error("unreachable")
            const answered = yield* o.respondApproval({ threadId: thread.id, approvalId: request.approvalId, decision })
            expect(answered.type === "approval_request" && answered.status).toBe(decision)
            const done = yield* untilRun(o, thread.id, (r) => r.status !== "running" && r.status !== "queued")
            expect(done.status).toBe("completed")
            expect(done.items.find((i) => i.type === "approval_request")).toMatchObject({ status: decision })
            // The model got the tool's outcome back and answered.
            expect(replyOf(done)).toContain("done:")
            const executed = done.items.find((i) => i.type === "command_execution")
            const exists = yield* Effect.promise(() =>
              waitUntil(() => Fs.existsSync(target), decision === "accept" ? 5_000 : 0)
            )
            // Should the file be wrong, the failure says what the agent reported of the command
            // and what the model heard back from it.
            expect(
              exists,
              `${decision}: the agent reported ${JSON.stringify(executed)}; the model heard ${JSON.stringify(replyOf(done))}`
            ).toBe(decision === "accept")
          }
        })
      )
    })

    it("killing the provider process mid-turn fails the run with the reason; the next run resumes natively", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: fx.dir })
          yield* o.startRun({ threadId: thread.id, provider, message: "the fruit is KIWI", wait: true })
          const from = fx.mock.requests.length
          yield* o.startRun({ threadId: thread.id, provider, message: "slowly [[slow:20000]]" })
          yield* Effect.promise(() => fx.mock.waitFor((r) => fx.latestPrompt(r).includes("slowly"), 30_000, from))
          census.sample()
          const killed = agentPids()
          expect(killed.length).toBeGreaterThan(0)
          for (const pid of killed) process.kill(pid, "SIGKILL")
          const failed = yield* untilRun(o, thread.id, (r) => r.status === "failed")
          expect(failed.failure?.reason).toBe("provider_crash")
          expect(failed.failure?.message).toContain("SIGKILL")
          const again = yield* o.startRun({ threadId: thread.id, provider, message: "which fruit?", wait: true })
          expect(again.status).toBe("completed")
          const view = yield* o.getThread(thread.id)
          expect(view.providerThreads).toHaveLength(1)
          // A new process resumed the same native thread: the model sees the first run.
          expect(fx.allInputText(requestWith("which fruit?")!)).toContain("the fruit is KIWI")
          if (kind === "codex") {
            const meta = JSON.parse(String(requestWith("which fruit?")!.headers["x-codex-turn-metadata"]))
            expect(meta.history_initialization).toBe("cold_resume")
          }
        })
      )
    })

    it("killing the process under two threads' turns fails both; each thread's next run resumes natively", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const [a, b] = yield* Effect.all([
            o.createThread({ workspace: fx.dir }),
            o.createThread({ workspace: fx.dir })
          ])
          yield* runsAtOnce(o, [a.id, "the tree is OAK"], [b.id, "the tree is ELM"], true)
          const from = fx.mock.requests.length
          yield* runsAtOnce(o, [a.id, "slowly A [[slow:20000]]"], [b.id, "slowly B [[slow:20000]]"])
          yield* promptsSeen(["slowly A", "slowly B"], from)
          census.sample()
          const killed = agentPids()
          expect(killed.length).toBeGreaterThan(0)
          for (const pid of killed) process.kill(pid, "SIGKILL")
          for (const thread of [a, b]) {
            const failed = yield* untilRun(o, thread.id, (r) => r.status === "failed")
            expect(failed.failure?.reason).toBe("provider_crash")
          }
          const [nextA, nextB] = yield* runsAtOnce(o, [a.id, "which tree, A?"], [b.id, "which tree, B?"], true)
          expect([nextA.status, nextB.status]).toEqual(["completed", "completed"])
          for (const [thread, mine, theirs, question] of [
            [a, "OAK", "ELM", "which tree, A?"],
            [b, "ELM", "OAK", "which tree, B?"]
          ] as const) {
            const view = yield* o.getThread(thread.id)
            expect(view.providerThreads).toHaveLength(1)
            const seen = fx.allInputText(requestWith(question, from)!)
            expect(seen).toContain(mine)
            expect(seen).not.toContain(theirs)
          }
          // The new processes are not the killed ones.
          census.sample()
          expect(agentPids().filter((pid) => killed.includes(pid))).toEqual([])
        })
      )
    })

    it("a restart of Skein between runs resumes the provider thread natively (cold resume)", async () => {
      const db = "restart.db"
      const threadId = await run(
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ workspace: fx.dir })
            yield* o.startRun({ threadId: thread.id, provider, message: "the city is OSLO", wait: true })
            census.sample()
            return thread.id
          }),
        db
      )
      await run(
        (o) =>
          Effect.gen(function* () {
            const after = yield* o.startRun({ threadId, provider, message: "which city?", wait: true })
            expect(after.status).toBe("completed")
            expect(after.contextResolution).toBe("none")
            const view = yield* o.getThread(threadId)
            expect(view.providerThreads).toHaveLength(1)
            expect(view.providerThreads[0]!.coverage.nativeRunOrdinals).toEqual([1, 2])
            expect(fx.allInputText(requestWith("which city?")!)).toContain("the city is OSLO")
          }),
        db
      )
    })

    it("Skein killed (SIGKILL) mid-turn: the agent's processes end with it; after a restart the run is interrupted and the next resumes natively", async () => {
      const from = fx.mock.requests.length
      const { host, info } = await startHost<{ readonly threadId: ThreadId; readonly runId: string }>(
        [fx.dir, "agent", fx.configFile, kind],
        60_000
      )
      try {
        await fx.mock.waitFor((r) => fx.latestPrompt(r).includes("slowly"), 30_000, from)
        census.sample()
        // The agent's processes under the host, mid-turn.
        const agents = descendants(host.pid!).filter((pid) => !(exeOf(pid) ?? "/node").endsWith("/node"))
        expect(agents.length).toBeGreaterThan(0)
        host.kill("SIGKILL")
        // Orphaned, each ends on its own once the dead host's pipes close.
        const ended = await waitUntil(() => agents.every((pid) => exeOf(pid) === null), 10_000)
        expect(ended ? [] : agents.filter((pid) => exeOf(pid) !== null)).toEqual([])
        await run(
          (o) =>
            Effect.gen(function* () {
              const before = yield* o.getThread(info.threadId)
              expect(before.runs.map((r) => r.status)).toEqual(["completed", "interrupted"])
              expect(before.runs[1]!.id).toBe(info.runId)
              expect(before.runs[1]!.failure?.reason).toBe("runtime_restart")
              const next = yield* o.startRun({ threadId: info.threadId, provider, message: "which bird?", wait: true })
              expect(next.status).toBe("completed")
              // The same native thread, resumed; the run Skein could not see to its end
              // is told again, as a delta (whatever the agent kept of it).
              expect(next.providerThreadId).toBe(before.runs[0]!.providerThreadId)
              expect(next.contextResolution).toBe("delta")
              const view = yield* o.getThread(info.threadId)
              const handoff = view.handoffs.find((h) => h.id === next.contextHandoffId)!
              expect(handoff.strategy).toBe("delta_since_target_last_seen")
              expect(handoff.coveredRunOrdinals).toEqual({ from: 2, to: 2 })
              expect(view.providerThreads).toHaveLength(1)
              expect(view.providerThreads[0]!.coverage.nativeRunOrdinals).toEqual([1, 3])
              expect(fx.allInputText(requestWith("which bird?", from)!)).toContain("the bird is ROBIN")
            }),
          "agent.db"
        )
      } finally {
        if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL")
      }
    })

    it("fork at run 1 of 2 through the runtime: served natively; the model sees run 1 and not run 2", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const source = yield* o.createThread({ workspace: fx.dir })
          const one = yield* o.startRun({
            threadId: source.id,
            provider,
            message: "fork source one says ECHO",
            wait: true
          })
          const two = yield* o.startRun({
            threadId: source.id,
            provider,
            message: "fork source two says FOXTROT",
            wait: true
          })
          census.sample()
          expect([one.status, two.status]).toEqual(["completed", "completed"])
          const { thread: fork, transfer } = yield* o.forkThread({
            sourceThreadId: source.id,
            sourcePoint: { runId: one.id }
          })
          expect(transfer).toMatchObject({ type: "fork", status: "pending", sourceProvider: provider })
          expect(transfer.sourcePoint).toMatchObject({ runId: one.id, runOrdinal: 1 })
          expect(transfer.sourcePoint.providerThreadRef).toBeDefined()
          expect(transfer.sourcePoint.providerTurnRef).toBeDefined()

          const onFork = yield* o.startRun({ threadId: fork.id, provider, message: "on the fork now", wait: true })
          census.sample()
          expect(onFork.status).toBe("completed")
          // Served natively: no handoff was written or delivered, the transfer says native_fork.
          expect(onFork.contextResolution).toBe("native")
          expect(onFork.contextHandoffId).toBeNull()
          expect(onFork.items.some((i) => i.type === "handoff_context")).toBe(false)
          const view = yield* o.getThread(fork.id)
          expect(view.handoffs).toEqual([])
          const resolved = view.transfers.find((t) => t.type === "fork")!
          expect(resolved).toMatchObject({ status: "consumed", consumedByRunId: onFork.id })
          expect(resolved.resolution?.strategy).toBe("native_fork")
          // A new native thread of its own, not the source's.
          const sourceView = yield* o.getThread(source.id)
          expect(view.providerThreads).toHaveLength(1)
          expect(view.providerThreads[0]!.nativeRef).not.toBe(sourceView.providerThreads[0]!.nativeRef)
          expect(resolved.resolution).toMatchObject({ providerThreadRef: view.providerThreads[0]!.nativeRef })

          // What the model was sent on the fork: run 1 from the native history, not run 2.
          const request = requestWith("on the fork now")!
          const seen = fx.allInputText(request)
          expect(seen).toContain("fork source one says ECHO")
          expect(seen).not.toContain("fork source two says FOXTROT")
          expect(seen).not.toContain("<skein_handoff")

          // The source goes on untouched: its next request still holds both runs.
          yield* o.startRun({ threadId: source.id, provider, message: "source again", wait: true })
          const sourceSeen = fx.allInputText(requestWith("source again")!)
          expect(sourceSeen).toContain("fork source one says ECHO")
          expect(sourceSeen).toContain("fork source two says FOXTROT")
          expect(sourceSeen).not.toContain("on the fork now")
        })
      )
    })

    it("rollback of the last run through the runtime: the next request no longer holds it", async () => {
      await run((o) =>
        Effect.gen(function* () {
          const thread = yield* o.createThread({ workspace: fx.dir })
          yield* o.startRun({ threadId: thread.id, provider, message: "keep this GOLF", wait: true })
          yield* o.startRun({ threadId: thread.id, provider, message: "drop this HOTEL", wait: true })
          census.sample()
          const rolled = yield* o.rollback({ threadId: thread.id, toRunOrdinal: 1 })
          expect(rolled.runs.map((r) => r.status)).toEqual(["completed", "rolled_back"])
          // The native thread was rolled back, so it is usable again without a summary.
          expect(rolled.providerThreads).toHaveLength(1)
          expect(rolled.providerThreads[0]).toMatchObject({
            status: "idle",
            coverage: { nativeRunOrdinals: [1], handoffIds: [] }
          })
          expect(rolled.providerThreads[0]!.statusReason).toContain("natively")

          const next = yield* o.startRun({ threadId: thread.id, provider, message: "after rolling back", wait: true })
          census.sample()
          expect(next.status).toBe("completed")
          expect(next.ordinal).toBe(3)
          expect(next.contextResolution).toBe("none")
          expect(next.providerThreadId).toBe(rolled.providerThreads[0]!.id)
          const seen = fx.allInputText(requestWith("after rolling back")!)
          expect(seen).toContain("keep this GOLF")
          expect(seen).not.toContain("drop this HOTEL")

          // And it stays gone on the turn after (the native thread itself lost it).
          yield* o.startRun({ threadId: thread.id, provider, message: "one more after", wait: true })
          const later = fx.allInputText(requestWith("one more after")!)
          expect(later).toContain("keep this GOLF")
          expect(later).toContain("after rolling back")
          expect(later).not.toContain("drop this HOTEL")
        })
      )
    })

    it("after a restart of Skein: a fork is still native, and a rollback still native (the thread not loaded)", async () => {
      const db = "restart-lineage.db"
      const source = await run(
        (o) =>
          Effect.gen(function* () {
            const thread = yield* o.createThread({ workspace: fx.dir })
            const one = yield* o.startRun({ threadId: thread.id, provider, message: "cold one says INDIA", wait: true })
            yield* o.startRun({ threadId: thread.id, provider, message: "cold two says JULIET", wait: true })
            census.sample()
            return { threadId: thread.id, runId: one.id }
          }),
        db
      )
      // A fresh runtime, so a fresh provider process that has not loaded the source's thread.
      await run(
        (o) =>
          Effect.gen(function* () {
            const { thread: fork } = yield* o.forkThread({
              sourceThreadId: source.threadId,
              sourcePoint: { runId: source.runId }
            })
            const onFork = yield* o.startRun({ threadId: fork.id, provider, message: "cold fork turn", wait: true })
            census.sample()
            expect(onFork).toMatchObject({ status: "completed", contextResolution: "native" })
            const seen = fx.allInputText(requestWith("cold fork turn")!)
            expect(seen).toContain("cold one says INDIA")
            expect(seen).not.toContain("cold two says JULIET")
          }),
        db
      )
      await run(
        (o) =>
          Effect.gen(function* () {
            const rolled = yield* o.rollback({ threadId: source.threadId, toRunOrdinal: 1 })
            census.sample()
            expect(rolled.providerThreads).toHaveLength(1)
            expect(rolled.providerThreads[0]).toMatchObject({
              status: "idle",
              statusReason: "rolled back natively to run 1",
              coverage: { nativeRunOrdinals: [1] }
            })
            const next = yield* o.startRun({
              threadId: source.threadId,
              provider,
              message: "cold after the rollback",
              wait: true
            })
            expect(next).toMatchObject({ status: "completed", contextResolution: "none" })
            const seen = fx.allInputText(requestWith("cold after the rollback")!)
            expect(seen).toContain("cold one says INDIA")
            expect(seen).not.toContain("cold two says JULIET")
            expect(seen).not.toContain("<skein_handoff")
          }),
        db
      )
    })

    it("fork at turn 1 of 2 and rollback, through the adapter: the model sees exactly what remains", async () => {
      const adapters = await Effect.runPromise(
        Effect.provide(ProviderRegistry, providerRegistryLayer({ configFile: fx.configFile, dataDir: fx.dir }))
      )
      const adapter = adapters.adapters.find((a) => a.name === kind)!
      const scope = await Effect.runPromise(Scope.make())
      try {
        await Effect.runPromise(
          Effect.gen(function* () {
            const session = yield* adapter.openSession({ workspace: fx.dir }).pipe(Scope.extend(scope))
            const native = yield* session.startThread({ workspace: fx.dir, model: null })
            const turn = (nativeRef: string, message: string) =>
              Effect.gen(function* () {
                const input: TurnInput = {
                  nativeRef,
                  runId: makeId.run(),
                  message,
                  handoff: null,
                  model: null,
                  workspace: fx.dir
                }
                const events = yield* TurnEvents.collect((onEvents) => session.runTurn(input, onEvents))
                census.sample()
                const end = events.at(-1) as ProviderEvent
                expect(end._tag).toBe("TurnCompleted")
                return (events[0] as Extract<ProviderEvent, { _tag: "TurnStarted" }>).turnRef
              })
            const run1 = yield* turn(native.nativeRef, "run one says ALPHA")
            const run2 = yield* turn(native.nativeRef, "run two says BRAVO")

            const fork = yield* session.forkThread(native.nativeRef, run1)
            expect(fork.nativeRef).not.toBe(native.nativeRef)
            yield* turn(fork.nativeRef, "on the fork")
            const onFork = fx.allInputText(requestWith("on the fork")!)
            expect(onFork).toContain("run one says ALPHA")
            expect(onFork).not.toContain("run two says BRAVO")

            yield* session.rollbackThread(native.nativeRef, run2)
            yield* turn(native.nativeRef, "after the rollback")
            const afterRollback = fx.allInputText(requestWith("after the rollback")!)
            expect(afterRollback).toContain("run one says ALPHA")
            expect(afterRollback).not.toContain("run two says BRAVO")

            const missing = yield* Effect.flip(session.rollbackThread(native.nativeRef, "no-such-turn"))
            expect(missing.code).toBe("turn_not_found")
          })
        )
      } finally {
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    })
  })
}
