/**
 * One app thread across both real agents, and what only shows with several instances:
 * - codex → claude → codex: a fact told only while on Claude reaches Codex's request
 *   after switching back, in a delta handoff on the resumed Codex thread;
 * - Claude's native subagents as child_agent items of the run;
 * - an instance's approval policy answering by itself;
 * - typed failures: a missing binary, a session id already in use, an unknown session.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { ProviderName } from "@skein/domain"
import { makeId, ProviderName as Name } from "@skein/domain"
import { makeClaudeAdapter, claudeCapabilities } from "@skein/adapters"
import { Effect, Exit, Scope } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { withRuntime } from "../support/runtime.js"
import type { MockServer } from "./mocks/MockServer.js"
import * as Messages from "./mocks/MessagesMock.js"
import * as Responses from "./mocks/ResponsesMock.js"
import { closeCrossFixture, type CrossFixture, makeCrossFixture, untilRun } from "./suite.js"
import { claudeEnv, claudePlaceholder, descendants, exeOf, processCensus, waitUntil } from "./support.js"

const codex = "codex" as ProviderName
const claude = "claude" as ProviderName

let dir: string
let responses: MockServer
let messages: MockServer
let configFile: string
let cross: CrossFixture | undefined
const census = processCensus()

beforeAll(async () => {
  const fx = await makeCrossFixture("skein-cross-", ({ claude, codex, dir }) => ({
    codex: { ...codex, askForApproval: "untrusted" },
    claude,
    "codex-decline": { ...codex, askForApproval: "untrusted", approvals: "decline" },
    "claude-idle": { ...claude, processIdleMs: 400 },
    "claude-accept": { ...claude, approvals: "accept" },
    "codex-missing": { driver: "codex", command: [Path.join(dir, "not-installed", "codex")] }
  }))
  ;({ configFile, dir, messages, responses } = fx)
  cross = fx
})

afterAll(() => closeCrossFixture(cross, census))

const runtime = <A, E>(program: Parameters<typeof withRuntime<A, E>>[1]) =>
  withRuntime(dir, program, { configFile, deadlines: { openMs: 60_000, callMs: 30_000, firstEventMs: 60_000 } })

describe("one thread across Codex and Claude Code", () => {
  it("whenBusy: interrupt stops a Codex turn under way and starts the Claude Code run instead", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const slow = yield* o.startRun({ threadId: thread.id, provider: codex, message: "take long [[slow:20000]]" })
        const next = yield* o.startRun({
          threadId: thread.id,
          provider: claude,
          message: "instead, the FIG",
          whenBusy: "interrupt",
          wait: true
        })
        census.sample()
        expect(next.status).toBe("completed")
        const view = yield* o.getThread(thread.id)
        expect(view.runs.map((r) => [r.id, r.status])).toEqual([
          [slow.id, "interrupted"],
          [next.id, "completed"]
        ])
      })
    )
  })

  it("whenBusy: queue behind a Codex turn: a Claude Code run and a Codex run start in order once it ends", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const threadId = thread.id
        const slow = yield* o.startRun({ threadId, provider: codex, message: "take a while [[slow:2000]]" })
        const fig = { threadId, provider: claude, message: "the fruit is FIG", whenBusy: "queue" as const }
        const onClaude = yield* o.startRun(fig)
        const pecan = {
          threadId,
          provider: codex,
          message: "and the nut is PECAN",
          whenBusy: "queue" as const,
          commandId: "cmd_cross_queue" as never
        }
        const onCodex = yield* o.startRun(pecan)
        expect([onClaude.status, onCodex.status]).toEqual(["queued", "queued"])
        const ended = yield* o.startRun({ ...pecan, wait: true })
        census.sample()
        expect([ended.id, ended.status]).toEqual([onCodex.id, "completed"])
        const view = yield* o.getThread(threadId)
        expect(view.runs.map((r) => [r.id, r.status])).toEqual([
          [slow.id, "completed"],
          [onClaude.id, "completed"],
          [onCodex.id, "completed"]
        ])
        // The last, back on Codex, learned what was said on Claude Code meanwhile.
        const request = responses.requests.filter((r) => Responses.latestPrompt(r) === pecan.message).at(-1)!
        expect(Responses.allInputText(request)).toContain("the fruit is FIG")
      })
    )
  })

  it("whenBusy: steer: Codex takes the message into its running turn (turn/steer)", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const threadId = thread.id
        const from = responses.requests.length
        const slow = yield* o.startRun({ threadId, provider: codex, message: "work on it [[slow:2500]]" })
        yield* Effect.promise(() =>
          responses.waitFor((r) => Responses.latestPrompt(r).includes("work on it"), 30_000, from)
        )
        const steer = {
          threadId,
          provider: codex,
          message: "also, the word is KIWI",
          whenBusy: "steer" as const,
          commandId: "cmd_cross_steer_codex" as never
        }
        const joined = yield* o.startRun(steer)
        expect([joined.id, joined.status]).toEqual([slow.id, "running"])
        const ended = yield* o.startRun({ ...steer, wait: true })
        census.sample()
        expect([ended.id, ended.status]).toEqual([slow.id, "completed"])
        expect(ended.items.filter((i) => i.type === "user_message").map((i) => i.text)).toContain(steer.message)
        // One run, one Codex turn: a request of that turn holds the steered words.
        expect((yield* o.getThread(threadId)).runs).toHaveLength(1)
        const steered = responses.requests.slice(from).filter((r) => Responses.allInputText(r).includes("KIWI"))
        expect(steered.length).toBeGreaterThan(0)
        expect(ended.items.some((i) => i.type === "assistant_message" && i.text.includes("KIWI"))).toBe(true)
      })
    )
  })

  it("whenBusy: steer: Claude Code takes the message at a tool's result, or answers it right after", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        for (const [provider, message] of [
          ["claude-accept", "run it [[cmd:sleep 2]]"],
          ["claude", "think it over [[slow:2500]]"]
        ] as const) {
          const thread = yield* o.createThread({ workspace: dir })
          const threadId = thread.id
          const from = messages.requests.length
          const slow = yield* o.startRun({ threadId, provider: Name.make(provider), message })
          yield* Effect.promise(() => messages.waitFor((r) => Messages.latestPrompt(r) === message, 30_000, from))
          const steer = {
            threadId,
            provider: Name.make(provider),
            message: `also, the word is KIWI for ${provider}`,
            whenBusy: "steer" as const,
            commandId: `cmd_cross_steer_${provider}` as never
          }
          const joined = yield* o.startRun(steer)
          expect([joined.id, joined.status]).toEqual([slow.id, "running"])
          const ended = yield* o.startRun({ ...steer, wait: true })
          census.sample()
          expect([ended.id, ended.status]).toEqual([slow.id, "completed"])
          expect(ended.items.filter((i) => i.type === "user_message").map((i) => i.text)).toContain(steer.message)
          expect((yield* o.getThread(threadId)).runs).toHaveLength(1)
          // The model got the steered words within the run, and the run ended after they were answered.
          const requests = messages.requests.slice(from).filter(Messages.isTurnRequest)
          expect(requests.some((r) => Messages.allInputText(r).includes(steer.message))).toBe(true)
          const last = ended.items.filter((i) => i.type === "assistant_message").at(-1)
          expect(last?.type === "assistant_message" && last.text).toBeTruthy()
          if (provider === "claude") expect(last?.type === "assistant_message" && last.text).toContain("KIWI")
          // The thread goes on as usual on the same session.
          const next = yield* o.startRun({ threadId, provider: Name.make(provider), message: "and now?", wait: true })
          expect(next.status).toBe("completed")
        }
      })
    )
  })

  it("codex → claude → codex: the fact told to Claude reaches Codex in a delta on its resumed thread", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const first = yield* o.startRun({
          threadId: thread.id,
          provider: codex,
          message: "we are writing a PARSER",
          wait: true
        })
        census.sample()
        const onClaude = yield* o.startRun({
          threadId: thread.id,
          provider: claude,
          message: "the codeword is PAPAYA",
          wait: true
        })
        census.sample()
        const back = yield* o.startRun({
          threadId: thread.id,
          provider: codex,
          message: "what is the codeword?",
          wait: true
        })
        expect([first.status, onClaude.status, back.status]).toEqual(["completed", "completed", "completed"])

        // Claude got the Codex run as a full summary, ahead of its user text.
        expect(onClaude.contextResolution).toBe("portable")
        const claudeRequest = messages.requests.filter(Messages.isTurnRequest).at(-1)!
        expect(Messages.latestPrompt(claudeRequest)).toBe("the codeword is PAPAYA")
        expect(Messages.allInputText(claudeRequest)).toContain("we are writing a PARSER")

        // Back on Codex: a delta handoff into the same native thread, resumed.
        expect(back.contextResolution).toBe("delta")
        const view = yield* o.getThread(thread.id)
        const handoff = view.handoffs.find((h) => h.id === back.contextHandoffId)!
        expect(handoff.strategy).toBe("delta_since_target_last_seen")
        const codexThreads = view.providerThreads.filter((pt) => pt.provider === "codex")
        expect(codexThreads).toHaveLength(1)
        expect(codexThreads[0]!.coverage.nativeRunOrdinals).toEqual([1, 3])
        expect(back.providerThreadId).toBe(first.providerThreadId)

        // What Codex's model received: the fact, inside the handoff block, in the same
        // user message as the new prompt, and the first run from its own history.
        const request = responses.requests.filter(Responses.isTurnRequest).at(-1)!
        expect(Responses.latestPrompt(request)).toBe("what is the codeword?")
        const input: Array<any> = request.body.input
        const lastUser = input.filter((item) => item.type === "message" && item.role === "user").at(-1)
        const parts: Array<string> = lastUser.content.map((part: any) => part.text)
        expect(parts).toHaveLength(2)
        expect(parts[0]).toContain(`<skein_handoff id="${handoff.id}">`)
        expect(parts[0]).toContain("PAPAYA")
        expect(parts[1]).toBe("what is the codeword?")
        expect(Responses.allInputText(request)).toContain("we are writing a PARSER")
        expect(back.items.find((i) => i.type === "handoff_context")).toMatchObject({ delivery: "preamble" })
      })
    )
  })

  it("an approval left unanswered reaches the next agent as an open question in the handoff", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const target = Path.join(dir, "never-answered.txt")
        yield* o.startRun({ threadId: thread.id, provider: codex, message: `try [[cmd:touch ${target}]]` })
        yield* untilRun(o, thread.id, (r) => r.items.some((i) => i.type === "approval_request" && i.status === "open"))
        census.sample()
        const stopped = yield* o.interruptRun({ threadId: thread.id })
        expect(stopped.status).toBe("interrupted")
        const interrupted = (yield* o.getThread(thread.id)).runs.at(-1)!
        expect(interrupted.items.find((i) => i.type === "approval_request")).toMatchObject({ status: "open" })
        const next = yield* o.startRun({ threadId: thread.id, provider: claude, message: "carry on", wait: true })
        expect(next.status).toBe("completed")
        const view = yield* o.getThread(thread.id)
        const handoff = view.handoffs.find((h) => h.id === next.contextHandoffId)!
        expect(handoff.summaryText).toContain(`touch ${target}`)
        expect(handoff.summaryText).toContain("awaiting answer")
        const request = messages.requests.filter(Messages.isTurnRequest).at(-1)!
        expect(Messages.allInputText(request)).toContain("awaiting answer")
      })
    )
  })

  it("Claude's native subagent is a child_agent item, completed in place with its result", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const run = yield* o.startRun({
          threadId: thread.id,
          provider: claude,
          message: "delegate [[task:count the files]]",
          wait: true
        })
        census.sample()
        expect(run.status).toBe("completed")
        // One node per subagent: its start and its end are the same item, updated in place.
        const children = run.items.filter((i) => i.type === "child_agent")
        expect(children).toHaveLength(1)
        const [child] = children
        if (child?.type !== "child_agent") throw new Error("unreachable")
        expect(child.status).toBe("completed")
        expect(child.description).toBe("a subtask")
        expect(child.result).toContain("ok: count the files")
        // The subagent's own request went to the model with its prompt.
        expect(messages.requests.some((r) => Messages.latestPrompt(r) === "count the files")).toBe(true)
      })
    )
  })

  it("Claude: an idle process is released while the runtime runs; the next turn resumes the session", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const provider = Name.make("claude-idle")
        yield* o.startRun({ threadId: thread.id, provider, message: "the tree is an OAK", wait: true })
        const claudes = () =>
          descendants().filter((pid) => {
            try {
              return Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("stream-json") && exeOf(pid) !== null
            } catch {
              return false
            }
          })
        census.sample()
        expect(claudes().length).toBeGreaterThan(0)
        expect(yield* Effect.promise(() => waitUntil(() => claudes().length === 0, 10_000))).toBe(true)
        const next = yield* o.startRun({ threadId: thread.id, provider, message: "which tree?", wait: true })
        census.sample()
        expect(next.status).toBe("completed")
        const request = messages.requests.filter((r) => Messages.latestPrompt(r) === "which tree?").at(-1)!
        expect(Messages.allInputText(request)).toContain("the tree is an OAK")
      })
    )
  })

  it("Claude: killed during the first turn of a new session, the session resumes with that turn's message", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const from = messages.requests.length
        yield* o.startRun({ threadId: thread.id, provider: claude, message: "first words [[slow:20000]]" })
        yield* Effect.promise(() =>
          messages.waitFor((r) => Messages.latestPrompt(r).includes("first words"), 30_000, from)
        )
        census.sample()
        for (const pid of descendants()) {
          try {
            if (Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("stream-json")) process.kill(pid, "SIGKILL")
          } catch {
            // Gone already.
          }
        }
        const failed = yield* untilRun(o, thread.id, (r) => r.status === "failed")
        expect(failed.failure?.reason).toBe("provider_crash")
        const next = yield* o.startRun({ threadId: thread.id, provider: claude, message: "second words", wait: true })
        census.sample()
        expect(next.status).toBe("completed")
        const request = messages.requests.filter((r) => Messages.latestPrompt(r) === "second words").at(-1)!
        expect(Messages.allInputText(request)).toContain("first words")
      })
    )
  })

  it("an instance's policy answers approvals itself and records the decision", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        for (const [provider, decision] of [
          ["codex-decline", "decline"],
          ["claude-accept", "accept"]
        ] as const) {
          const thread = yield* o.createThread({ workspace: dir })
          const target = Path.join(dir, `${provider}.txt`)
          const run = yield* o.startRun({
            threadId: thread.id,
            provider: Name.make(provider),
            message: `go [[cmd:touch ${target}]]`,
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          expect(run.items.find((i) => i.type === "approval_request")).toMatchObject({ status: decision })
          expect(Fs.existsSync(target)).toBe(decision === "accept")
        }
      })
    )
  })

  it("a missing binary fails the run with what to install; provider.list says the instance is unusable", async () => {
    await runtime((o) =>
      Effect.gen(function* () {
        const thread = yield* o.createThread({ workspace: dir })
        const run = yield* o.startRun({
          threadId: thread.id,
          provider: Name.make("codex-missing"),
          message: "hi",
          wait: true
        })
        expect(run.status).toBe("failed")
        expect(run.failure?.message).toContain("npm install -g @openai/codex@0.171.0")
        const info = (yield* o.listProviders).find((p) => p.name === "codex-missing")!
        expect(info.binary).toMatchObject({ usable: false, version: null })
        const ready = (yield* o.listProviders).find((p) => p.name === "claude")!
        expect(ready.binary?.usable).toBe(true)
      })
    )
  })

  it("Claude: a session id already in use and an unknown session are typed failures", async () => {
    const stateDir = Path.join(dir, "claude-typed")
    const adapter = makeClaudeAdapter({
      name: Name.make("claude-typed"),
      capabilities: claudeCapabilities,
      command: [claudePlaceholder],
      env: claudeEnv(dir, messages.url),
      stateDir
    })
    const scope = await Effect.runPromise(Scope.make())
    try {
      await Effect.runPromise(
        Effect.gen(function* () {
          const session = yield* adapter.openSession({ workspace: dir }).pipe(Scope.extend(scope))
          const unknown = yield* Effect.flip(session.resumeThread(Crypto.randomUUID()))
          expect(unknown.kind).toBe("resume_failed")
          expect(unknown.code).toBe("conversation_not_found")
          // A session that exists, started again as if it were new: Claude Code refuses its id.
          const native = yield* session.startThread({ workspace: dir, model: null })
          yield* session.runTurn(
            {
              nativeRef: native.nativeRef,
              runId: makeId.run(),
              message: "hello",
              handoff: null,
              model: null,
              workspace: dir
            },
            () => Effect.void
          )
          census.sample()
          yield* Scope.close(scope, Exit.void)
        })
      )
      const fresh = await Effect.runPromise(Scope.make())
      try {
        await Effect.runPromise(
          Effect.gen(function* () {
            const launches = JSON.parse(Fs.readFileSync(Path.join(stateDir, "claude-launches.json"), "utf8"))
            expect(launches).toEqual({})
            const sessions = Fs.readdirSync(Path.join(dir, "claude-config", "projects"), { recursive: true }).map(
              String
            )
            const id = sessions.map((f) => /([0-9a-f-]{36})\.jsonl$/.exec(f)?.[1]).find((x) => x !== undefined)!
            Fs.writeFileSync(Path.join(stateDir, "claude-launches.json"), JSON.stringify({ [id]: { kind: "new" } }))
            const again = makeClaudeAdapter({
              name: Name.make("claude-typed"),
              capabilities: claudeCapabilities,
              command: [claudePlaceholder],
              env: claudeEnv(dir, messages.url),
              stateDir
            })
            const session = yield* again.openSession({ workspace: dir }).pipe(Scope.extend(fresh))
            const inUse = yield* Effect.flip(session.resumeThread(id))
            expect(inUse.code).toBe("session_in_use")
            expect(inUse.detail).toContain("already in use")
          })
        )
      } finally {
        await Effect.runPromise(Scope.close(fresh, Exit.void))
      }
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
