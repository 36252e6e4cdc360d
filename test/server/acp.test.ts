/**
 * `skein acp` driven by the official ACP SDK's client (`@agentclientprotocol/sdk`), as an
 * editor would: the real executable as a child process over stdio, its embedded runtime
 * on a fresh database with the scripted providers.
 */
import * as acp from "@agentclientprotocol/sdk/unstable"
import { describe, expect, it } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Readable, Writable } from "node:stream"
import { seeded } from "./fuzzFrames.js"
import { binPath, childEnv, runSkein, tempDir, trackDaemons } from "./support.js"

interface Editor {
  readonly updates: Array<acp.SessionNotification>
  readonly permissions: Array<acp.RequestPermissionRequest>
}

/** Starts `skein acp` on `home` and runs `op` as an editor connected to it; stops it after. */
const withAcp = async <A>(
  home: string,
  op: (context: acp.ClientContext, editor: Editor) => Promise<A>,
  args: ReadonlyArray<string> = ["--db", Path.join(home, "skein.db"), "--data-dir", home]
): Promise<A> => {
  const child = ChildProcess.spawn(process.execPath, [binPath, "acp", ...args], {
    env: childEnv(home),
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stderr = ""
  child.stderr.on("data", (d) => (stderr += String(d)))
  const editor: Editor = { updates: [], permissions: [] }
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>
  )
  try {
    return await acp
      .client({ name: "skein-test-editor" })
      .onNotification(acp.methods.client.session.update, ({ params }) => void editor.updates.push(params))
      .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
        editor.permissions.push(params)
        return { outcome: { outcome: "selected", optionId: "accept" } }
      })
      .connectWith(stream, (context) => op(context, editor))
  } catch (error) {
    throw new Error(`${String(error)}; skein acp stderr: ${stderr.slice(-2000)}`)
  } finally {
    child.stdin.end()
    const exited = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10_000)
      child.once("exit", () => {
        clearTimeout(timer)
        resolve(true)
      })
      if (child.exitCode !== null) resolve(true)
    })
    if (!exited) child.kill("SIGKILL")
  }
}

const textsOf = (updates: ReadonlyArray<acp.SessionNotification>, kind: string): Array<string> =>
  updates.flatMap(({ update }) => {
    if (update.sessionUpdate !== kind || !("content" in update)) return []
    const content = update.content as { readonly type?: string; readonly text?: string } | null
    return content?.type === "text" && typeof content.text === "string" ? [content.text] : []
  })

describe("skein acp", () => {
  const daemon = trackDaemons()

  it("with --url, serves a running daemon's threads", async () => {
    const home = tempDir("skein-acp-url-")
    const workspace = tempDir("skein-acp-url-ws-")
    try {
      const running = await daemon(["--port", "0"], childEnv(home))
      const sessionId = await withAcp(
        home,
        async (agent, editor) => {
          await agent.request(acp.methods.agent.initialize, {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: {}
          })
          const session = await agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
          const answer = await agent.request(acp.methods.agent.session.prompt, {
            sessionId: session.sessionId,
            prompt: [{ type: "text", text: "through the daemon [[decide:use FIG]]" }]
          })
          expect(answer.stopReason).toBe("end_turn")
          expect(textsOf(editor.updates, "agent_message_chunk").join("\n")).toContain("decision: use FIG")
          return session.sessionId
        },
        ["--url", running.url]
      )
      // The thread is the daemon's.
      const shown = await runSkein(
        ["call", "--url", running.url, "thread.get", JSON.stringify({ threadId: sessionId })],
        childEnv(home)
      )
      expect(shown.code, shown.stderr).toBe(0)
      expect(JSON.parse(shown.stdout).runs.map((r: { status: string }) => r.status)).toEqual(["completed"])
    } finally {
      Fs.rmSync(home, { recursive: true, force: true })
      Fs.rmSync(workspace, { recursive: true, force: true })
    }
  }, 60_000)

  it("an editor: prompts, a provider switch with recall, slash commands, a permission, cancel, list; load, close, resume after a restart", async () => {
    const home = tempDir("skein-acp-")
    const workspace = tempDir("skein-acp-ws-")
    try {
      const sessionId = await withAcp(home, async (agent, editor) => {
        const init = await agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {}
        })
        expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION)
        expect(init.agentCapabilities?.loadSession).toBe(true)
        expect(init.agentInfo?.name).toBe("skein")

        const session = await agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
        const option = session.configOptions?.find((o) => o.id === "provider")
        expect(option?.type === "select" && option.currentValue).toBe("alpha")
        expect(option?.type === "select" && option.options.map((o) => ("value" in o ? o.value : ""))).toEqual([
          "alpha",
          "beta"
        ])

        const first = await agent.request(acp.methods.agent.session.prompt, {
          sessionId: session.sessionId,
          prompt: [{ type: "text", text: "the fruit is KIWI [[cmd:npm test:0]] [[plan:read;write]]" }]
        })
        expect(first.stopReason).toBe("end_turn")
        expect(textsOf(editor.updates, "agent_message_chunk").join("\n")).toContain("ok")
        expect(editor.updates.some(({ update }) => update.sessionUpdate === "tool_call")).toBe(true)
        expect(editor.updates.some(({ update }) => update.sessionUpdate === "plan")).toBe(true)

        // A switch of provider between prompts: beta was not there, and is handed what it missed.
        const switched = await agent.request(acp.methods.agent.session.setConfigOption, {
          sessionId: session.sessionId,
          configId: "provider",
          value: "beta"
        })
        const now = switched.configOptions.find((o) => o.id === "provider")
        expect(now?.type === "select" && now.currentValue).toBe("beta")
        const before = editor.updates.length
        const second = await agent.request(acp.methods.agent.session.prompt, {
          sessionId: session.sessionId,
          prompt: [{ type: "text", text: "[[recall:KIWI]]" }]
        })
        expect(second.stopReason).toBe("end_turn")
        const after = editor.updates.slice(before)
        expect(textsOf(after, "agent_message_chunk").join("\n")).toContain("recall:KIWI=yes")
        // The handoff is shown, not hidden.
        expect(
          after.some(
            ({ update }) => update.sessionUpdate === "tool_call" && update.title.startsWith("Context handed over")
          )
        ).toBe(true)

        // An unknown provider is refused with Skein's typed error.
        const refused = await agent
          .request(acp.methods.agent.session.setConfigOption, {
            sessionId: session.sessionId,
            configId: "provider",
            value: "gamma"
          })
          .catch((error: acp.RequestError) => error)
        expect(refused).toBeInstanceOf(Error)
        expect((refused as acp.RequestError).data).toMatchObject({ _tag: "ProviderNotFound" })

        // A permission the agent asks for reaches the editor; its answer is recorded.
        await agent.request(acp.methods.agent.session.prompt, {
          sessionId: session.sessionId,
          prompt: [{ type: "text", text: "[[ask:Deploy to staging?]]" }]
        })
        expect(editor.permissions.map((p) => p.toolCall.title)).toEqual(["Deploy to staging?"])

        // Cancel: the prompt ends cancelled.
        const slow = agent.request(acp.methods.agent.session.prompt, {
          sessionId: session.sessionId,
          prompt: [{ type: "text", text: "take long [[sleep:20000]]" }]
        })
        await new Promise((resolve) => setTimeout(resolve, 500))
        const started = Date.now()
        await agent.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId })
        expect((await slow).stopReason).toBe("cancelled")
        expect(Date.now() - started).toBeLessThan(5_000)

        const listed = await agent.request(acp.methods.agent.session.list, {})
        expect(listed.sessions.map((s) => [s.sessionId, s.cwd])).toEqual([[session.sessionId, workspace]])

        // Slash commands, offered once the session opened.
        const offered = editor.updates.flatMap(({ update }) =>
          update.sessionUpdate === "available_commands_update" ? update.availableCommands.map((c) => c.name) : []
        )
        expect(offered).toEqual(["provider", "fork", "merge-back", "rollback", "handoff"])
        const command = async (text: string) => {
          const from = editor.updates.length
          const answer = await agent.request(acp.methods.agent.session.prompt, {
            sessionId: session.sessionId,
            prompt: [{ type: "text", text }]
          })
          expect(answer.stopReason).toBe("end_turn")
          return textsOf(editor.updates.slice(from), "agent_message_chunk").join("\n")
        }
        const handoff = await command("/handoff")
        expect(handoff).toMatch(/^Handoff hof_\S+ \(full_thread_summary, runs 1-1, ready\):\n\n/)
        expect(handoff).toContain("KIWI")
        expect(await command("/provider alpha")).toBe("The next prompts go to alpha.")
        const forked = await command("/fork")
        expect(forked).toMatch(/^Forked as thr_/)
        const runsBefore = editor.updates.length
        const wrong = await agent
          .request(acp.methods.agent.session.prompt, {
            sessionId: session.sessionId,
            prompt: [{ type: "text", text: "/provider gamma" }]
          })
          .catch((error: acp.RequestError) => error)
        expect((wrong as acp.RequestError).data).toMatchObject({ _tag: "ProviderNotFound" })
        expect(editor.updates.length).toBe(runsBefore)
        expect((await agent.request(acp.methods.agent.session.list, {})).sessions).toHaveLength(2)
        // The unstable session/fork: a fork thread, a session of its own that remembers.
        const fork = await agent.request(acp.methods.agent.session.fork, {
          sessionId: session.sessionId,
          cwd: workspace
        })
        expect(fork.sessionId).not.toBe(session.sessionId)
        const inFork = editor.updates.length
        await agent.request(acp.methods.agent.session.prompt, {
          sessionId: fork.sessionId,
          prompt: [{ type: "text", text: "[[recall:KIWI]]" }]
        })
        expect(textsOf(editor.updates.slice(inFork), "agent_message_chunk").join("\n")).toContain("recall:KIWI=yes")
        return session.sessionId
      })

      // After a restart: the session loads, its history replayed as updates.
      await withAcp(home, async (agent, editor) => {
        await agent.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {}
        })
        const unknown = await agent
          .request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hello" }] })
          .catch((error: acp.RequestError) => error)
        expect((unknown as acp.RequestError).data).toMatchObject({ _tag: "ThreadNotFound" })
        const loaded = await agent.request(acp.methods.agent.session.load, {
          sessionId,
          cwd: workspace,
          mcpServers: []
        })
        const option = loaded.configOptions?.find((o) => o.id === "provider")
        expect(option?.type === "select" && option.currentValue).toBe("beta")
        expect(textsOf(editor.updates, "user_message_chunk")).toEqual([
          "the fruit is KIWI [[cmd:npm test:0]] [[plan:read;write]]",
          "[[recall:KIWI]]",
          "[[ask:Deploy to staging?]]",
          "take long [[sleep:20000]]"
        ])
        const again = await agent.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: "text", text: "[[recall:KIWI]]" }]
        })
        expect(again.stopReason).toBe("end_turn")
        // Closed, the session takes no prompt; resumed, it does, without its history again.
        expect(await agent.request(acp.methods.agent.session.close, { sessionId })).toEqual({})
        const closed = await agent
          .request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] })
          .catch((error: acp.RequestError) => error)
        expect((closed as acp.RequestError).data).toMatchObject({ _tag: "ThreadNotFound" })
        const replayed = editor.updates.length
        const resumed = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: workspace })
        const current = resumed.configOptions?.find((o) => o.id === "provider")
        // The provider its last run was on.
        expect(current?.type === "select" && current.currentValue).toBe("beta")
        expect(textsOf(editor.updates.slice(replayed), "user_message_chunk")).toEqual([])
        const last = await agent.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: "text", text: "[[recall:KIWI]]" }]
        })
        expect(last.stopReason).toBe("end_turn")
      })
    } finally {
      Fs.rmSync(home, { recursive: true, force: true })
      Fs.rmSync(workspace, { recursive: true, force: true })
    }
  }, 120_000)

  it("2,000 seeded hostile lines: every request is answered once, the rest ignored, the process alive", async () => {
    const home = tempDir("skein-acp-hostile-")
    const child = ChildProcess.spawn(
      process.execPath,
      [binPath, "acp", "--db", Path.join(home, "skein.db"), "--data-dir", home],
      { env: childEnv(home), stdio: ["pipe", "pipe", "pipe"] }
    )
    child.stdin.on("error", () => {})
    const answers = new Map<string, number>()
    let out = ""
    child.stdout.on("data", (d) => {
      out += String(d)
      let newline = out.indexOf("\n")
      while (newline >= 0) {
        const line = out.slice(0, newline)
        out = out.slice(newline + 1)
        newline = out.indexOf("\n")
        try {
          const message = JSON.parse(line) as { id?: unknown; method?: unknown }
          if (message.method === undefined && message.id !== undefined && message.id !== null) {
            const key = JSON.stringify(message.id)
            answers.set(key, (answers.get(key) ?? 0) + 1)
          }
        } catch {
          answers.set("unparsable output", (answers.get("unparsable output") ?? 0) + 1)
        }
      }
    })
    try {
      // Seeded: the same lines on every run.
      const { next: random, pick } = seeded(0x5eed)
      const expected = new Set<string>()
      let next = 1
      const request = (method: string, params: unknown) => {
        const id = next % 3 === 0 ? `r-${next}` : next
        next++
        expected.add(JSON.stringify(id))
        return JSON.stringify({ jsonrpc: "2.0", id, method, params })
      }
      const lines: Array<string> = [request("initialize", { protocolVersion: 1, clientCapabilities: {} })]
      const methods = [
        "session/new",
        "session/prompt",
        "session/load",
        "session/list",
        "session/set_config_option",
        "nope/x",
        ""
      ]
      const junk = [
        () =>
          Array.from({ length: 1 + Math.floor(random() * 80) }, () =>
            String.fromCharCode(32 + Math.floor(random() * 95))
          ).join(""),
        () =>
          request(pick(methods), { sessionId: pick([1, null, "thr_missing", {}, []]), cwd: pick(["", "relative", 5]) }),
        () => request(pick(methods), pick([null, 42, "x", [1, 2], { prompt: "not an array" }])),
        () =>
          JSON.stringify({ jsonrpc: "2.0", id: -1, method: "session/list", params: {} }).slice(
            0,
            Math.floor(random() * 40)
          ),
        () => JSON.stringify(pick([1, "s", null, true, [], [1, { a: 2 }]])),
        () =>
          JSON.stringify({
            jsonrpc: pick(["1.0", 2, undefined]),
            id: pick([{}, [1], true, 1.5]),
            method: "initialize"
          }),
        () => JSON.stringify({ jsonrpc: "2.0", method: pick(methods), params: pick([{}, { sessionId: 7 }, null]) }),
        () => JSON.stringify({ jsonrpc: "2.0", id: 900_000 + Math.floor(random() * 1000), result: {} }),
        () => "[".repeat(1 + Math.floor(random() * 5000)),
        () => "\u0000\u0001\u001b[31m",
        () => request("session/list", {})
      ]
      while (lines.length < 2000) lines.push(pick(junk)())
      // One line past the bound, answered and skipped.
      lines.push(`{"jsonrpc":"2.0","id":"big","method":"session/list","params":{"x":"${"x".repeat(9 * 1024 * 1024)}"}}`)
      expected.add(JSON.stringify("big"))
      lines.push(request("session/list", {}))
      for (const line of lines) child.stdin.write(`${line}\n`)
      const done = () => [...expected].every((id) => answers.has(id))
      const deadline = Date.now() + 30_000
      while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
      expect([...expected].filter((id) => answers.get(id) !== 1)).toEqual([])
      expect(answers.get("unparsable output")).toBeUndefined()
      expect(child.exitCode).toBeNull()
    } finally {
      child.stdin.end()
      await new Promise((resolve) => {
        const timer = setTimeout(() => {
          child.kill("SIGKILL")
          resolve(undefined)
        }, 10_000)
        child.once("exit", () => {
          clearTimeout(timer)
          resolve(undefined)
        })
      })
      Fs.rmSync(home, { recursive: true, force: true })
    }
  }, 90_000)
})
