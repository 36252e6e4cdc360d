/**
 * A mock of the Responses API (`POST /v1/responses`, server-sent events) for Codex.
 * What it answers depends on directives in the newest user text of the request:
 * - `[[cmd:COMMAND]]`: a call of Codex's `exec_command` tool; once Codex posts the
 *   tool's output, a closing message.
 * - `[[askcmd:COMMAND]]`: the same call, asking to run outside the sandbox (so that
 *   Codex asks for approval under `on-request`).
 * - `[[spawn:PROVIDER:PROMPT]]`: a call of Skein's MCP tool `spawn_subagent` (namespace
 *   `mcp__skein`), waiting for the child; once Codex posts the tool's output, a closing
 *   message that quotes it.
 * - `[[spawnbg:PROVIDER:PROMPT]]`: the same call without waiting (`wait: false`).
 * - `[[agent:PROMPT]]`: Codex's own `spawn_agent` (namespace `multi_agent_v1`) with
 *   PROMPT, then `wait_agent` on the agent it names, then a closing message; the agent's
 *   own request (PROMPT, no directive) gets `ok: PROMPT`.
 * - `[[agentbg:MS:PROMPT]]`: `spawn_agent` with PROMPT and no wait, then a closing
 *   message; the agent's own request answers after MS (so it ends after its parent's turn).
 * - `[[slow:MS]]`: starts the message, then waits MS before finishing it (so a test
 *   can interrupt or kill mid-turn).
 * - `[[fail]]`: an HTTP 500.
 * - otherwise: `ok: ` and the start of the prompt.
 */
import type { CapturedRequest, MockServer } from "./MockServer.js"
import { delay, directive, startMockServer } from "./MockServer.js"

/** The text parts of one input item of a Responses request. */
const textsOf = (item: any): Array<string> =>
  Array.isArray(item?.content)
    ? item.content.filter((part: any) => typeof part?.text === "string").map((part: any) => part.text as string)
    : []

/** The user's own words in the newest user message (the last text part: a handoff preamble comes before it). */
export const latestPrompt = (request: CapturedRequest): string => {
  const input: Array<any> = Array.isArray(request.body?.input) ? request.body.input : []
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i]
    if (item?.type === "message" && item.role === "user") {
      const texts = textsOf(item).filter((t) => !t.startsWith("<environment_context>"))
      if (texts.length > 0) return texts[texts.length - 1]!
    }
  }
  return ""
}

/** Every text the model received in a request (instructions, history, the new message). */
export const allInputText = (request: CapturedRequest): string => {
  const input: Array<any> = Array.isArray(request.body?.input) ? request.body.input : []
  return input.flatMap((item) => [...textsOf(item), typeof item?.output === "string" ? item.output : ""]).join("\n")
}

export const isTurnRequest = (request: CapturedRequest): boolean =>
  request.method === "POST" && request.path.startsWith("/v1/responses")

export const startResponsesMock = (options: { readonly logFile?: string } = {}): Promise<MockServer> => {
  let counter = 0
  return startMockServer(async (request, res, signal) => {
    if (!isTurnRequest(request)) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: `the mock serves /v1/responses, not ${request.path}` } }))
      return
    }
    const n = ++counter
    const input: Array<any> = request.body?.input ?? []
    const last = input[input.length - 1]
    const prompt = latestPrompt(request)
    if (last?.type !== "function_call_output" && directive(prompt, "fail") !== null) {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: "the mock model failed as asked", type: "server_error" } }))
      return
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    const send = (event: Record<string, unknown>) => res.write(`data: ${JSON.stringify(event)}\n\n`)
    const completed = () => {
      send({
        type: "response.completed",
        response: { id: `resp_${n}`, usage: { input_tokens: 100 + n, output_tokens: 7, total_tokens: 107 + n } }
      })
      res.end()
    }
    /** A tool call as the model's whole answer (`namespace` for an MCP server's or Codex's own tool namespace). */
    const callTool = (name: string, args: unknown, namespace?: string) => {
      send({
        type: "response.output_item.done",
        output_index: 0,
        item: {
          type: "function_call",
          call_id: `call_${n}`,
          ...(namespace === undefined ? {} : { namespace }),
          name,
          arguments: JSON.stringify(args)
        }
      })
      completed()
    }
    const command = directive(prompt, "cmd")
    // A long yield: on a loaded machine the command's own start-up must not outlast the tool call.
    if (command !== null && last?.type !== "function_call_output") {
      return callTool("exec_command", { cmd: command, yield_time_ms: 15_000 })
    }
    const escalated = directive(prompt, "askcmd")
    if (escalated !== null && last?.type !== "function_call_output") {
      return callTool("exec_command", {
        cmd: escalated,
        yield_time_ms: 15_000,
        sandbox_permissions: "require_escalated",
        justification: "the test asks for it"
      })
    }
    const agent = directive(prompt, "agent")
    // The tool outputs of this turn: after the newest user message.
    const lastUser = input.map((item) => item?.role === "user").lastIndexOf(true)
    const outputs = input.slice(lastUser + 1).filter((item) => item?.type === "function_call_output")
    if (agent !== null && outputs.length === 0) return callTool("spawn_agent", { message: agent }, "multi_agent_v1")
    const background = directive(prompt, "agentbg")
    if (background !== null && outputs.length === 0) {
      const [ms, ...task] = background.split(":")
      return callTool("spawn_agent", { message: `${task.join(":")} [[slow:${ms}]]` }, "multi_agent_v1")
    }
    if (agent !== null && outputs.length === 1) {
      const spawned = JSON.parse(String(outputs[0].output)) as { agent_id?: string }
      return callTool("wait_agent", { targets: [spawned.agent_id], timeout_ms: 30_000 }, "multi_agent_v1")
    }
    const spawn = directive(prompt, "spawn") ?? directive(prompt, "spawnbg")
    if (spawn !== null && last?.type !== "function_call_output") {
      const [provider, ...rest] = spawn.split(":")
      const wait = directive(prompt, "spawn") !== null
      const args = { provider, prompt: rest.join(":"), wait, ...(wait ? { timeoutMs: 60_000 } : {}) }
      return callTool("spawn_subagent", args, "mcp__skein")
    }
    const text =
      last?.type === "function_call_output"
        ? `done: ${String(last.output).slice(0, 400)}`
        : `ok: ${prompt.slice(0, 60)}`
    send({ type: "response.created", response: { id: `resp_${n}` } })
    send({
      type: "response.output_item.added",
      output_index: 0,
      item: { type: "message", role: "assistant", id: `msg_${n}`, content: [] }
    })
    send({
      type: "response.output_text.delta",
      item_id: `msg_${n}`,
      output_index: 0,
      content_index: 0,
      delta: text.slice(0, 3)
    })
    const slow = directive(prompt, "slow")
    if (slow !== null && last?.type !== "function_call_output") await delay(Number(slow), signal)
    if (signal.aborted) return
    // The rest as a delta too: a client that shows only deltas (codex-acp) sees the whole text.
    send({
      type: "response.output_text.delta",
      item_id: `msg_${n}`,
      output_index: 0,
      content_index: 0,
      delta: text.slice(3)
    })
    send({
      type: "response.output_item.done",
      output_index: 0,
      item: { type: "message", role: "assistant", id: `msg_${n}`, content: [{ type: "output_text", text }] }
    })
    completed()
  }, options)
}
