/**
 * An ACP agent on the official SDK (`@agentclientprotocol/sdk`), for what the agents
 * written by others never ask of a client: it calls the client's methods and reports
 * each outcome as message text. Directives in the prompt:
 * - `[[read:PATH]]`: `fs/read_text_file`; `[[write:PATH=TEXT]]`: `fs/write_text_file`.
 * - `[[terminal]]`: `terminal/create`; `[[ask:METHOD]]`: a request the protocol lacks.
 * - `[[tools]]`: lists the tools of the session's HTTP MCP server (the MCP SDK's client).
 * - `[[show]]`: a thought, a tool call with a diff (pending, then completed), a plan.
 * - `[[hostile]]`: lines no client should trip on, written straight to stdout.
 * Otherwise it answers `echo: ` and the prompt. Run as `node TestAcpAgent.js`.
 */
import * as acp from "@agentclientprotocol/sdk"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Readable, Writable } from "node:stream"

const servers = new Map<string, ReadonlyArray<acp.McpServer>>()

const outcomeOf = async (run: () => Promise<unknown>): Promise<string> => {
  try {
    return `ok ${JSON.stringify(await run())}`
  } catch (error) {
    return `refused ${JSON.stringify(error instanceof Error ? error.message : error)} ${JSON.stringify((error as { data?: unknown }).data ?? null)}`
  }
}

const listTools = async (sessionId: string): Promise<unknown> => {
  const server = servers.get(sessionId)?.find((s) => "url" in s)
  if (server === undefined || !("url" in server)) return "no MCP server given"
  const client = new Client({ name: "test-acp-agent", version: "1.0.0" })
  const headers = Object.fromEntries(server.headers.map((h) => [h.name, h.value]))
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } }))
  const called = await client.callTool({ name: "list_providers", arguments: {} })
  await client.close()
  return called.content
}

const hostile = [
  "this is not json",
  "[1, 2, 3]",
  JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: 42 } }),
  JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId: "nope", update: { sessionUpdate: "agent_message_chunk" } }
  }),
  JSON.stringify({ jsonrpc: "2.0", method: "no/such/notification", params: {} }),
  JSON.stringify({ jsonrpc: "2.0", id: "never-asked", result: {} }),
  JSON.stringify({ jsonrpc: "2.0", id: 987654, error: { code: 1, message: "an answer to nothing" } }),
  JSON.stringify({ jsonrpc: "2.0", id: "hostile-1", method: "fs/read_text_file", params: { path: 7 } }),
  JSON.stringify({ jsonrpc: "2.0", id: "hostile-2", method: "session/request_permission", params: {} })
]

acp
  .agent({ name: "test-acp-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: false,
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { resume: {} }
    },
    agentInfo: { name: "test-acp-agent", version: "1.0.0" },
    authMethods: []
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `test-${servers.size + 1}`
    servers.set(sessionId, params.mcpServers)
    return { sessionId }
  })
  // Only a session this process holds: after a restart the client must start another.
  .onRequest(acp.methods.agent.session.resume, ({ params }) => {
    if (!servers.has(params.sessionId)) throw new acp.RequestError(-32002, `no session ${params.sessionId} here`)
    return {}
  })
  .onRequest(acp.methods.agent.session.prompt, async (context) => {
    const { sessionId, prompt } = context.params
    const text = prompt.map((block) => (block.type === "text" ? block.text : "")).join("\n")
    const say = (chunk: string) =>
      context.client.notify(acp.methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: chunk } }
      })
    const update = (update: acp.SessionUpdate) =>
      context.client.notify(acp.methods.client.session.update, { sessionId, update })
    const lines: Array<string> = []
    for (const [, path] of text.matchAll(/\[\[read:([^\]]+)\]\]/g)) {
      lines.push(
        `read ${path}: ${await outcomeOf(() => context.client.request(acp.methods.client.fs.readTextFile, { sessionId, path: path! }))}`
      )
    }
    for (const [, path, content] of text.matchAll(/\[\[write:([^\]=]+)=([^\]]*)\]\]/g)) {
      lines.push(
        `write ${path}: ${await outcomeOf(() => context.client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: path!, content: content! }))}`
      )
    }
    if (text.includes("[[terminal]]")) {
      lines.push(
        `terminal: ${await outcomeOf(() => context.client.request(acp.methods.client.terminal.create, { sessionId, command: "true" }))}`
      )
    }
    for (const [, method] of text.matchAll(/\[\[ask:([^\]]+)\]\]/g)) {
      lines.push(`ask ${method}: ${await outcomeOf(() => context.client.request(method!, { sessionId }))}`)
    }
    if (text.includes("[[tools]]")) lines.push(`tools: ${await outcomeOf(() => listTools(sessionId))}`)
    if (text.includes("[[show]]")) {
      await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "a secret " } })
      await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "thought" } })
      await update({
        sessionUpdate: "tool_call",
        toolCallId: "t1",
        title: "Edit notes.md",
        kind: "edit",
        status: "pending",
        rawInput: { file: "notes.md" }
      })
      await update({
        sessionUpdate: "tool_call_update",
        toolCallId: "t1",
        status: "completed",
        content: [
          { type: "diff", path: "/w/notes.md", oldText: null, newText: "hello" },
          { type: "content", content: { type: "text", text: "edited" } }
        ]
      })
      await update({
        sessionUpdate: "plan",
        entries: [
          { content: "look", priority: "high", status: "completed" },
          { content: "leap", priority: "low", status: "pending" }
        ]
      })
    }
    if (text.includes("[[hostile]]")) {
      for (const line of hostile) process.stdout.write(`${line}\n`)
      lines.push("hostile: sent")
    }
    if (lines.length === 0) lines.push(`echo: ${prompt.map((b) => (b.type === "text" ? b.text : "")).at(-1)}`)
    await say(lines[0]!)
    for (const line of lines.slice(1)) await say(`\n${line}`)
    return { stopReason: "end_turn" }
  })
  .connect(
    acp.ndJsonStream(
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
      Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>
    )
  )
