/**
 * Skein's tools in the hands of the agents Skein runs: the real Codex binary (offline,
 * against the mock Responses API) gets Skein's MCP server in its thread's config, with a
 * credential for its app thread, and its model calls `spawn_subagent`: a child thread on
 * the real Claude Code binary (against the mock Messages API) answers, and the answer
 * comes back as the tool's result in the same turn; and the other way round; and Codex's
 * own agents, observed.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { ProviderName } from "@skein/domain"
import { serveWebSocket } from "@skein/server"
import { Orchestrator } from "@skein/runtime"
import { Effect, Layer, Schedule } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { runtimeLayer } from "../support/runtime.js"
import type { MockServer } from "./mocks/MockServer.js"
import * as Messages from "./mocks/MessagesMock.js"
import * as Responses from "./mocks/ResponsesMock.js"
import { closeCrossFixture, type CrossFixture, makeCrossFixture, replyOf, untilRun } from "./suite.js"
import { processCensus } from "./support.js"

const codex = "codex" as ProviderName
const claude = "claude" as ProviderName

let dir: string
let responses: MockServer
let messages: MockServer
let configFile: string
let fixture: CrossFixture | undefined
const census = processCensus()

beforeAll(async () => {
  fixture = await makeCrossFixture("skein-agent-tools-", ({ claude, codex }) => ({
    codex,
    claude,
    // Acts more freely than either: no agent of theirs may start a subagent on it.
    "codex-full": { ...codex, sandbox: "danger-full-access" }
  }))
  ;({ configFile, dir, messages, responses } = fixture)
})

afterAll(() => closeCrossFixture(fixture, census))

/** A runtime on the instances above with the daemon's transport, so `/mcp` serves the tools. */
const withServedRuntime = <A, E>(program: (o: Orchestrator["Type"]) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const runtime = yield* Layer.build(
          runtimeLayer(dir, {
            configFile,
            deadlines: { openMs: 60_000, callMs: 30_000, firstEventMs: 60_000 },
            // Sessions close soon once idle: a credential given to one goes with it.
            sessionIdleMs: 1_500
          })
        )
        yield* serveWebSocket({ port: 0 }).pipe(Effect.provide(runtime))
        return yield* program(yield* Effect.provide(Orchestrator, runtime))
      })
    )
  )

describe("Skein's tools for the agents it runs", () => {
  it(
    "a Codex parent spawns a Claude Code child through MCP and gets its answer in the same turn",
    () =>
      withServedRuntime((o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({ title: "codex parent" })
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: codex,
            message: "ask a helper [[spawn:claude:find the PAPAYA]]",
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          // Codex called the tool and got the child's answer back within the turn.
          expect(run.items.find((item) => item.type === "tool_call")).toMatchObject({ name: "skein.spawn_subagent" })
          expect(replyOf(run)).toContain("ok: find the PAPAYA")
          // The child: a subagent thread of the parent, its run on Claude Code, completed.
          const children = yield* o.listThreads({ parentThreadId: parent.id })
          expect(children).toHaveLength(1)
          expect(children[0]!.lineage).toMatchObject({ relationshipToParent: "subagent" })
          const child = yield* o.getThread(children[0]!.id)
          expect(child.runs.map((r) => [r.provider, r.status])).toEqual([["claude", "completed"]])
          // Codex's request after the call held the tool's output, with the child's answer.
          const outputs = responses.requests
            .filter(Responses.isTurnRequest)
            .flatMap((r) =>
              ((r.body?.input ?? []) as Array<any>).filter((item) => item?.type === "function_call_output")
            )
          expect(outputs.some((item) => String(item.output).includes("ok: find the PAPAYA"))).toBe(true)
          // The parent's next run: Codex's next request still holds it.
          yield* o.startRun({ threadId: parent.id, provider: codex, message: "what did the helper say", wait: true })
          const last = responses.requests.filter(Responses.isTurnRequest).at(-1)!
          expect(Responses.allInputText(last)).toContain("ok: find the PAPAYA")
        })
      ),
    180_000
  )

  it(
    "a Claude Code parent may not start a subagent that acts more freely than it does",
    () =>
      withServedRuntime((o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({ title: "claude parent, bounded" })
          const from = messages.requests.length
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: claude,
            message: "ask a freer helper [[spawn:codex-full:delete everything]]",
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          expect(yield* o.listThreads({ parentThreadId: parent.id })).toEqual([])
          // The refusal came back to Claude Code as the tool's error, saying why and what to do.
          const results = messages.requests
            .slice(from)
            .filter(Messages.isTurnRequest)
            .flatMap((r) =>
              ((r.body?.messages ?? []) as Array<any>).flatMap((m) => (Array.isArray(m?.content) ? m.content : []))
            )
            .filter((block: any) => block?.type === "tool_result")
          const text = JSON.stringify(results.map((block: any) => block.content))
          expect(text).toContain("codex-full acts more freely (approvals ask, sandbox full)")
          expect(text).toContain("list_providers")
        })
      ),
    180_000
  )

  it(
    "a Codex parent that does not wait learns its Claude Code child's result in its next run",
    () =>
      withServedRuntime((o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({ title: "codex parent, no wait" })
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: codex,
            message: "start a helper [[spawnbg:claude:the stone is JADE]]",
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          // The child runs on; once it has ended …
          const children = yield* o.listThreads({ parentThreadId: parent.id })
          expect(children).toHaveLength(1)
          const childRun = yield* untilRun(o, children[0]!.id, (r) => r.status !== "running" && r.status !== "queued")
          expect(childRun.status).toBe("completed")
          // … the parent's next run gets its result, as a subagent_result transfer.
          const next = yield* o.startRun({
            threadId: parent.id,
            provider: codex,
            message: "what did it find?",
            wait: true
          })
          expect(next.status).toBe("completed")
          const request = responses.requests.filter((r) => Responses.latestPrompt(r) === "what did it find?").at(-1)!
          expect(Responses.allInputText(request)).toContain("ok: the stone is JADE")
          const view = yield* o.getThread(parent.id)
          expect(view.transfers.filter((t) => t.type === "subagent_result").map((t) => t.status)).toEqual(["consumed"])
        })
      ),
    180_000
  )

  it(
    "a Codex run whose model calls its own spawn_agent yields a child node and an observe-only thread",
    () =>
      withServedRuntime((o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({ title: "codex with its own agents" })
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: codex,
            message: "delegate [[agent:count the LIMES]]",
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          // One node for the agent, updated in place: spawned (running), then done when waited for.
          const nodes = run.items.filter((item) => item.type === "child_agent")
          expect(nodes).toHaveLength(1)
          const node = nodes[0]!
          expect(node).toMatchObject({
            type: "child_agent",
            description: "count the LIMES",
            status: "completed",
            result: "ok: count the LIMES"
          })
          const nativeRef = node.type === "child_agent" ? node.nativeThreadRef : null
          expect(nativeRef).toMatch(/^[0-9a-f-]{36}$/)
          // Its observe-only thread, named by the node.
          const children = yield* o.listThreads({ parentThreadId: parent.id })
          expect(children).toHaveLength(1)
          expect(children[0]!.lineage).toMatchObject({ relationshipToParent: "subagent", observeOnly: true })
          expect(node.type === "child_agent" ? node.childThreadId : undefined).toBe(children[0]!.id)
        })
      ),
    180_000
  )

  it(
    "a Codex agent that outlives its parent's turn: the run ends once the agent has, with its result",
    () =>
      withServedRuntime((o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({ title: "codex with a background agent" })
          const from = responses.requests.length
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: codex,
            message: "delegate [[agentbg:1500:count the PEARS]]",
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          // The parent never waited for its agent (no wait_agent call; its turn ended first) …
          const requests = responses.requests.slice(from)
          expect(requests.some((r) => Responses.allInputText(r).includes("agent_id"))).toBe(true)
          expect(requests.some((r) => JSON.stringify(r.body?.input ?? []).includes("wait_agent"))).toBe(false)
          // … and the agent's node says how the agent itself ended, not what the spawn said.
          const nodes = run.items.filter((item) => item.type === "child_agent")
          expect(nodes).toHaveLength(1)
          expect(nodes[0]).toMatchObject({
            status: "completed",
            result: expect.stringContaining("ok: count the PEARS")
          })
          // Interrupted while only its agent runs, the run ends at once.
          const slow = yield* o.startRun({
            threadId: parent.id,
            provider: codex,
            message: "again [[agentbg:20000:wait]]"
          })
          yield* Effect.promise(() =>
            responses.waitFor((r) => Responses.latestPrompt(r).startsWith("wait [[slow:20000]]"), 30_000, from)
          )
          const started = Date.now()
          const stopped = yield* o.interruptRun({ threadId: parent.id })
          expect([stopped.id, stopped.status]).toEqual([slow.id, "interrupted"])
          expect(Date.now() - started).toBeLessThan(5_000)
        })
      ),
    180_000
  )

  it(
    "a Claude Code parent spawns a Codex child through MCP and gets its answer in the same turn",
    () =>
      withServedRuntime((o) =>
        Effect.gen(function* () {
          const parent = yield* o.createThread({ title: "claude parent" })
          const run = yield* o.startRun({
            threadId: parent.id,
            provider: claude,
            message: "ask a helper [[spawn:codex:name the MANGO]]",
            wait: true
          })
          census.sample()
          expect(run.status).toBe("completed")
          // Skein's spawn tool ran without asking.
          expect(run.items.some((item) => item.type === "approval_request")).toBe(false)
          expect(replyOf(run)).toContain("ok: name the MANGO")
          const children = yield* o.listThreads({ parentThreadId: parent.id })
          expect(children).toHaveLength(1)
          const child = yield* o.getThread(children[0]!.id)
          expect(child.runs.map((r) => [r.provider, r.status])).toEqual([["codex", "completed"]])
          // Claude Code's request after the call held the tool's result, with the child's answer.
          const results = messages.requests
            .filter(Messages.isTurnRequest)
            .flatMap((r) =>
              ((r.body?.messages ?? []) as Array<any>).flatMap((m) => (Array.isArray(m?.content) ? m.content : []))
            )
            .filter((block: any) => block?.type === "tool_result")
          expect(results.some((block: any) => JSON.stringify(block.content).includes("ok: name the MANGO"))).toBe(true)
          // The credential went in a private file, not on the command line.
          const files = (Fs.readdirSync(dir, { recursive: true }) as Array<string>).filter((f) =>
            /mcp-[^/]*\.json$/.test(f)
          )
          expect(files.length).toBeGreaterThan(0)
          for (const file of files) expect(Fs.statSync(Path.join(dir, file)).mode & 0o777).toBe(0o600)
          // That credential is good while its session lives, and refused once it has ended.
          const newest = files
            .map((file) => Path.join(dir, file))
            .sort((a, b) => Fs.statSync(b).mtimeMs - Fs.statSync(a).mtimeMs)[0]!
          const config = JSON.parse(Fs.readFileSync(newest, "utf8"))
          const { headers, url } = config.mcpServers.skein as { url: string; headers: Record<string, string> }
          const listTools = () =>
            Effect.promise(() =>
              fetch(url, {
                method: "POST",
                headers: {
                  ...headers,
                  "content-type": "application/json",
                  accept: "application/json, text/event-stream"
                },
                body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} })
              }).then((response) => response.status)
            )
          expect(yield* listTools()).toBe(200)
          const sessionsOf = Effect.map(o.listProviders, (providers) =>
            providers.filter((p) => p.name === claude).flatMap((p) => p.sessions)
          )
          yield* Effect.repeat(sessionsOf, {
            until: (sessions) => sessions.length === 0,
            schedule: Schedule.spaced("100 millis"),
            times: 100
          })
          expect(yield* sessionsOf).toEqual([])
          expect(yield* listTools()).toBe(401)
        })
      ),
    180_000
  )
})
