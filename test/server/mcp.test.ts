/**
 * Skein's tools over MCP, at the daemon transport's `/mcp`, driven by the official MCP
 * SDK's client (`@modelcontextprotocol/client`) with credentials a host got through the
 * RPC (`thread.toolCredential`), against the real runtime and scripted providers.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { describe, expect, it } from "@effect/vitest"
import type { ThreadId } from "@skein/domain"
import { makeSkeinClient } from "@skein/server"
import { Effect } from "effect"
import { withServer } from "./support.js"

type ToolResult = {
  readonly isError?: boolean
  readonly structuredContent?: unknown
  readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }>
}

/** An SDK client on `url` presenting `token`, closed with the scope. */
const mcpClient = (url: string, token: string | undefined) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "skein-test", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } }
      })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const call = (client: Client, name: string, args: Record<string, unknown> = {}) =>
  Effect.promise(() => client.callTool({ name, arguments: args }) as Promise<ToolResult>)

const structured = (result: ToolResult) => result.structuredContent as Record<string, any>

/** A raw POST of an MCP initialize to `url`, for what the SDK client would not send. */
const rawInitialize = (url: string, headers: Record<string, string>) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      })
    })
    return { status: response.status, body: await response.text(), auth: response.headers.get("www-authenticate") }
  })

describe("Skein's tools over MCP", () => {
  it.live(
    "the SDK's client lists the tools and calls each with a host credential; the parent learns the result",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          expect(server.mcpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
          const rpc = yield* makeSkeinClient({ url: server.url })
          const parent = yield* rpc.thread.create({ title: "parent" })
          const credential = yield* rpc.thread.toolCredential({ threadId: parent.id })
          expect(credential.url).toBe(server.mcpUrl)
          const client = yield* mcpClient(credential.url!, credential.token)

          const { tools } = yield* Effect.promise(() => client.listTools())
          const byName = new Map(tools.map((tool) => [tool.name, tool]))
          expect([...byName.keys()].sort()).toEqual([
            "await_subagents",
            "cancel_subagent",
            "list_providers",
            "spawn_subagent",
            "subagent_status"
          ])
          const spawnTool = byName.get("spawn_subagent")!
          expect(spawnTool.annotations).toMatchObject({
            readOnlyHint: false,
            destructiveHint: false,
            openWorldHint: false
          })
          expect(spawnTool.inputSchema).toMatchObject({ type: "object", required: ["provider", "prompt"] })
          expect(Object.keys((spawnTool.inputSchema as { properties: object }).properties).sort()).toEqual(
            ["model", "prompt", "provider", "requestId", "timeoutMs", "title", "wait"].sort()
          )
          expect(byName.get("subagent_status")!.annotations).toMatchObject({ readOnlyHint: true })
          expect(byName.get("list_providers")!.inputSchema).toEqual({
            type: "object",
            properties: {},
            additionalProperties: false
          })
          expect(byName.get("cancel_subagent")!.annotations).toMatchObject({ destructiveHint: true })

          const providers = structured(yield* call(client, "list_providers"))
          expect(providers.providers.map((p: { name: string }) => p.name).sort()).toEqual(["claude", "codex"])

          // Waited for: the child's result is the tool's answer.
          const waited = yield* call(client, "spawn_subagent", {
            provider: "claude",
            prompt: "look it up [[decide:use PEACH]]",
            title: "lookup",
            wait: true,
            timeoutMs: 60_000,
            requestId: "call-1"
          })
          expect(waited.isError).toBeFalsy()
          const child = structured(waited)
          expect(child).toMatchObject({ status: "completed" })
          expect(child.result).toContain("PEACH")
          expect(JSON.parse(waited.content[0]!.text!)).toEqual(child)
          const childView = yield* rpc.thread.get({ threadId: child.childThreadId })
          expect(childView.thread.title).toBe("lookup")
          expect(childView.thread.lineage).toMatchObject({
            parentThreadId: parent.id,
            relationshipToParent: "subagent"
          })
          // The same requestId answers the same child.
          const retried = structured(
            yield* call(client, "spawn_subagent", {
              provider: "claude",
              prompt: "look it up [[decide:use PEACH]]",
              title: "lookup",
              requestId: "call-1"
            })
          )
          expect([retried.childThreadId, retried.runId]).toEqual([child.childThreadId, child.runId])

          // Not waited for: started, then awaited, its status read, a cancel of a finished child is harmless.
          const started = structured(
            yield* call(client, "spawn_subagent", { provider: "codex", prompt: "count [[sleep:300]] [[decide:PLUM]]" })
          )
          expect(["queued", "running"]).toContain(started.status)
          const awaited = structured(
            yield* call(client, "await_subagents", { childThreadIds: [started.childThreadId], timeoutMs: 60_000 })
          )
          expect(awaited.subagents).toHaveLength(1)
          expect(awaited.subagents[0]).toMatchObject({ childThreadId: started.childThreadId, status: "completed" })
          expect(awaited.subagents[0].result).toContain("PLUM")
          const status = structured(yield* call(client, "subagent_status", { childThreadId: started.childThreadId }))
          expect(status).toEqual(awaited.subagents[0])
          const cancelled = structured(yield* call(client, "cancel_subagent", { childThreadId: started.childThreadId }))
          expect(cancelled.status).toBe("completed")

          // Both results reach the parent's next run as subagent_result transfers.
          const next = yield* rpc.run.start({
            threadId: parent.id,
            provider: "codex" as never,
            message: "[[recall:PLUM]]",
            wait: true
          })
          const parentView = yield* rpc.thread.get({ threadId: parent.id })
          const results = parentView.transfers.filter((t) => t.type === "subagent_result")
          expect(results.map((t) => [t.sourceThreadId, t.status]).sort()).toEqual(
            [
              [child.childThreadId, "consumed"],
              [started.childThreadId, "consumed"]
            ].sort()
          )
          expect(next.items.some((item) => item.type === "assistant_message" && item.text.includes("PLUM"))).toBe(true)
        })
      ),
    120_000
  )

  it.live(
    "refuses calls without a live credential (401), from a foreign page (403), and reaches no other thread",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const rpc = yield* makeSkeinClient({ url: server.url })
          const mine = yield* rpc.thread.create({ title: "mine" })
          const theirs = yield* rpc.thread.create({ title: "theirs" })
          const myToken = (yield* rpc.thread.toolCredential({ threadId: mine.id })).token
          const theirToken = (yield* rpc.thread.toolCredential({ threadId: theirs.id })).token

          const missing = yield* rawInitialize(server.mcpUrl, {})
          expect(missing.status).toBe(401)
          expect(missing.auth).toContain("Bearer")
          expect(missing.body).toContain("thread.toolCredential")
          const wrong = yield* rawInitialize(server.mcpUrl, { authorization: "Bearer skt_not-a-credential" })
          expect(wrong.status).toBe(401)
          const foreign = yield* rawInitialize(server.mcpUrl, {
            authorization: `Bearer ${myToken}`,
            origin: "https://evil.example"
          })
          expect(foreign.status).toBe(403)
          const right = yield* rawInitialize(server.mcpUrl, { authorization: `Bearer ${myToken}` })
          expect(right.status).toBe(200)
          // The SDK's client, refused the same way.
          const refused = yield* Effect.exit(mcpClient(server.mcpUrl, "skt_not-a-credential"))
          expect(refused._tag).toBe("Failure")

          // Without a requestId, the caller's own id for the tool call (in _meta) makes a retry the same call.
          const theirClient = yield* mcpClient(server.mcpUrl, theirToken)
          const byCallId = (callId: string) =>
            Effect.promise(
              () =>
                theirClient.callTool({
                  name: "spawn_subagent",
                  arguments: { provider: "codex", prompt: "retried [[decide:KIWI]]" },
                  _meta: { callId }
                }) as Promise<ToolResult>
            ).pipe(Effect.map(structured))
          const once = yield* byCallId("call_77")
          expect((yield* byCallId("call_77")).childThreadId).toBe(once.childThreadId)
          expect((yield* byCallId("call_78")).childThreadId).not.toBe(once.childThreadId)

          // Their child is not mine to read, wait for or cancel.
          const theirChild = structured(
            yield* call(theirClient, "spawn_subagent", {
              provider: "codex",
              prompt: "theirs [[decide:FIG]]",
              wait: true
            })
          )
          const myClient = yield* mcpClient(server.mcpUrl, myToken)
          for (const [tool, args] of [
            ["subagent_status", { childThreadId: theirChild.childThreadId }],
            ["cancel_subagent", { childThreadId: theirChild.childThreadId }],
            ["await_subagents", { childThreadIds: [theirChild.childThreadId], timeoutMs: 1000 }]
          ] as const) {
            const result = yield* call(myClient, tool, args)
            expect(result.isError).toBe(true)
            expect(structured(result).error._tag).toBe("NotASubagent")
            expect(result.content[0]!.text).toContain("not a subagent of thread")
          }
          // With no children named, mine are none: theirs are not among them.
          expect(structured(yield* call(myClient, "await_subagents", { timeoutMs: 100 })).subagents).toEqual([])

          // Arguments that do not decode are refused before anything is written.
          const before = (yield* rpc.thread.list({ parentThreadId: mine.id })).length
          const bad = yield* call(myClient, "spawn_subagent", { provider: "codex" })
          expect(bad.isError).toBe(true)
          const unknownProvider = yield* call(myClient, "spawn_subagent", { provider: "gamma", prompt: "x" })
          expect(unknownProvider.isError).toBe(true)
          expect(structured(unknownProvider).error._tag).toBe("ProviderNotFound")
          expect((yield* rpc.thread.list({ parentThreadId: mine.id })).length).toBe(before)

          // A credential for a thread that does not exist is not issued.
          const none = yield* Effect.flip(rpc.thread.toolCredential({ threadId: "thr_missing" as ThreadId }))
          expect(none._tag).toBe("ThreadNotFound")
        })
      ),
    120_000
  )

  it.live(
    "refuses a subagent deeper than the depth limit with a typed error the agent can read",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const server = yield* withServer()
          const rpc = yield* makeSkeinClient({ url: server.url })
          let threadId = (yield* rpc.thread.create({ title: "root" })).id as string
          // Three levels of subagents are allowed (the default limit), the fourth is not.
          for (let level = 1; level <= 4; level++) {
            const { token } = yield* rpc.thread.toolCredential({ threadId: threadId as ThreadId })
            const client = yield* mcpClient(server.mcpUrl, token)
            const result = yield* call(client, "spawn_subagent", {
              provider: "codex",
              prompt: `level ${level} [[decide:L${level}]]`,
              wait: true
            })
            if (level <= 3) {
              expect(result.isError).toBeFalsy()
              threadId = structured(result).childThreadId
            } else {
              expect(result.isError).toBe(true)
              expect(structured(result).error).toMatchObject({ _tag: "SubagentLimitReached" })
              expect(result.content[0]!.text).toContain("subagents may nest 3 deep")
            }
          }
        })
      ),
    120_000
  )
})
