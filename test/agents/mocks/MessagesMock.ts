/**
 * A mock of the Messages API (`POST /v1/messages`, always streamed as server-sent
 * events with `event:` lines) for Claude Code. What it answers depends on directives in
 * the newest user text of the request:
 * - `[[cmd:COMMAND]]`: a call of the `Bash` tool; once the tool's result comes back, a
 *   closing message.
 * - `[[task:PROMPT]]`: a call of the `Agent` tool (a native subagent) with that prompt;
 *   the subagent's own request (whose prompt is PROMPT) gets `ok: PROMPT`.
 * - `[[spawn:PROVIDER:PROMPT]]`: a call of Skein's MCP tool `spawn_subagent`
 *   (`mcp__skein__spawn_subagent`), waiting for the child; then a closing message.
 * - `[[slow:MS]]`: starts the text, then waits MS before finishing it.
 * - `[[fail]]`: an HTTP 500 that Claude Code must not retry.
 * - otherwise: `ok: ` and the start of the prompt.
 */
import type { CapturedRequest, MockServer } from "./MockServer.js"
import { delay, directive, startMockServer } from "./MockServer.js"

const blocksOf = (message: any): Array<any> =>
  typeof message?.content === "string"
    ? [{ type: "text", text: message.content }]
    : Array.isArray(message?.content)
      ? message.content
      : []

const isReminder = (text: string) => text.startsWith("<system-reminder>")

/** The newest user message of a request. */
const lastUser = (request: CapturedRequest): any => {
  const messages: Array<any> = Array.isArray(request.body?.messages) ? request.body.messages : []
  return [...messages].reverse().find((m) => m?.role === "user")
}

/** The user's own words in the newest user message (its last text block: a handoff preamble comes before it). */
export const latestPrompt = (request: CapturedRequest): string => {
  const texts = blocksOf(lastUser(request))
    .filter((b) => b?.type === "text" && typeof b.text === "string" && !isReminder(b.text))
    .map((b) => b.text as string)
  return texts[texts.length - 1] ?? ""
}

/** Every text the model received in the request's messages (history and the new message). */
export const allInputText = (request: CapturedRequest): string => {
  const messages: Array<any> = Array.isArray(request.body?.messages) ? request.body.messages : []
  return messages
    .flatMap((m) => blocksOf(m))
    .map((b) =>
      typeof b?.text === "string"
        ? b.text
        : typeof b?.content === "string"
          ? b.content
          : JSON.stringify(b?.content ?? "")
    )
    .join("\n")
}

export const isTurnRequest = (request: CapturedRequest): boolean =>
  request.method === "POST" && request.path.startsWith("/v1/messages") && !request.path.includes("count_tokens")

/** The session a request belongs to, as Claude Code says. */
export const sessionOf = (request: CapturedRequest): string | undefined => {
  const value = request.headers["x-claude-code-session-id"]
  return typeof value === "string" ? value : undefined
}

export const startMessagesMock = (options: { readonly logFile?: string } = {}): Promise<MockServer> => {
  let counter = 0
  return startMockServer(async (request, res, signal) => {
    if (!isTurnRequest(request)) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no ${request.path} here` } }))
      return
    }
    const n = ++counter
    const user = lastUser(request)
    const toolResult = blocksOf(user).find((b) => b?.type === "tool_result")
    const prompt = latestPrompt(request)
    if (toolResult === undefined && directive(prompt, "fail") !== null) {
      res.writeHead(500, { "content-type": "application/json", "x-should-retry": "false" })
      res.end(
        JSON.stringify({ type: "error", error: { type: "api_error", message: "the mock model failed as asked" } })
      )
      return
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    const event = (type: string, data: Record<string, unknown>) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
    event("message_start", {
      message: {
        id: `msg_${n}`,
        type: "message",
        role: "assistant",
        model: "mock-model",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100 + n, output_tokens: 1 }
      }
    })
    const finish = (stopReason: string) => {
      event("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 7 } })
      event("message_stop", {})
      res.end()
    }
    const command = directive(prompt, "cmd")
    const task = directive(prompt, "task")
    const spawn = directive(prompt, "spawn")
    if (toolResult === undefined && (command !== null || task !== null || spawn !== null)) {
      const [provider, ...rest] = (spawn ?? "").split(":")
      const [name, input] =
        command !== null
          ? ["Bash", { command, description: "run a command" }]
          : task !== null
            ? ["Agent", { description: "a subtask", prompt: task, subagent_type: "general-purpose" }]
            : ["mcp__skein__spawn_subagent", { provider, prompt: rest.join(":"), wait: true, timeoutMs: 60_000 }]
      event("content_block_start", {
        index: 0,
        content_block: { type: "tool_use", id: `toolu_${n}`, name, input: {} }
      })
      event("content_block_delta", {
        index: 0,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(input) }
      })
      event("content_block_stop", { index: 0 })
      return finish("tool_use")
    }
    const text =
      toolResult !== undefined
        ? `done: ${JSON.stringify(toolResult.content ?? "").slice(0, 400)}`
        : `ok: ${prompt.slice(0, 60)}`
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } })
    event("content_block_delta", { index: 0, delta: { type: "text_delta", text: text.slice(0, 3) } })
    const slow = directive(prompt, "slow")
    if (slow !== null && toolResult === undefined) await delay(Number(slow), signal)
    if (signal.aborted) return
    event("content_block_delta", { index: 0, delta: { type: "text_delta", text: text.slice(3) } })
    event("content_block_stop", { index: 0 })
    finish("end_turn")
  }, options)
}
