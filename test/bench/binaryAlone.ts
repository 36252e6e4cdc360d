/**
 * A pinned agent binary driven directly over its own protocol, with no Skein between:
 * the yardstick of the agents benches (agents.ts, and the side-by-side bench's added
 * latency per turn). Codex: `app-server`, `turn/start` until `turn/completed`; Claude
 * Code: stream-json, a user line until its `result`.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { codexUnreadNotifications, providerRegistryLayer } from "@skein/adapters"
import { ProviderRegistry } from "@skein/domain"
import { Effect } from "effect"
import { claudePlaceholder, codexLauncher, lineClient } from "../agents/support.js"

export type Kind = "codex" | "claude"

/** The binary the driver of `kind` runs (its probe's path), found with a config in `dataDir`. */
export const resolveBinary = async (kind: Kind, dataDir: string): Promise<string> => {
  const configFile = Path.join(dataDir, `${kind}-probe.json`)
  const command = [kind === "codex" ? codexLauncher : claudePlaceholder]
  Fs.writeFileSync(configFile, JSON.stringify({ providers: { [kind]: { driver: kind, command } } }))
  const registry = await Effect.runPromise(
    Effect.provide(ProviderRegistry, providerRegistryLayer({ configFile, dataDir }))
  )
  const probe = registry.adapters.find((adapter) => adapter.name === kind)?.probe
  const path = probe === undefined ? undefined : (await Effect.runPromise(probe)).path
  if (path === undefined || path === null) throw new Error(`no ${kind} binary found (${command[0]})`)
  return path
}

/** Keeps this process's main thread busy for `ms`, as Skein's own work during a turn would. */
export const busy = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // Spinning.
  }
}

/**
 * The binary alone: start-up until the first turn is accepted, and then a turn round
 * trip, repeatable; `busyMs` keeps this process busy for that long once the turn is
 * accepted (the calibration round).
 */
export const direct = async (kind: Kind, binary: string, env: Record<string, string>, cwd: string) => {
  const t0 = performance.now()
  if (kind === "codex") {
    const c = lineClient(binary, ["app-server"], env, cwd)
    const call = c.call
    // The same turn as the driver's: Codex sends the same notifications to both.
    await call("initialize", {
      clientInfo: { name: "bench", title: "bench", version: "0" },
      capabilities: {
        experimentalApi: false,
        requestAttestation: false,
        optOutNotificationMethods: codexUnreadNotifications
      }
    })
    c.send({ method: "initialized" })
    const thread = (await call("thread/start", { cwd })).result.thread.id as string
    const turn = (text: string) => {
      const done = c.next((m) => m.method === "turn/completed" && m.params?.threadId === thread)
      const accepted = call("turn/start", { threadId: thread, input: [{ type: "text", text, text_elements: [] }] })
      return { accepted, done }
    }
    const first = turn("first turn")
    await first.accepted
    const startup = performance.now() - t0
    await first.done
    return {
      startup,
      turn: async (text: string, busyMs = 0) => {
        const t = turn(text)
        await t.accepted
        busy(busyMs)
        await t.done
      },
      pid: c.pid,
      stop: c.stop
    }
  }
  const session = Crypto.randomUUID()
  const c = lineClient(
    binary,
    [
      "-p",
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json",
      "--verbose",
      "--permission-prompt-tool",
      "stdio",
      "--session-id",
      session
    ],
    { ...env, CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: "1", DISABLE_AUTOUPDATER: "1" },
    cwd
  )
  const ready = c.next((m) => m.type === "control_response")
  c.send({ type: "control_request", request_id: "init", request: { subtype: "initialize" } })
  await ready
  const turn = async (text: string) => {
    const done = c.next((m) => m.type === "result")
    c.send({
      type: "user",
      session_id: "",
      parent_tool_use_id: null,
      uuid: Crypto.randomUUID(),
      message: { role: "user", content: [{ type: "text", text }] }
    })
    return done
  }
  const first = turn("first turn")
  const startup = performance.now() - t0
  await first
  return {
    startup,
    turn: async (text: string, busyMs = 0) => {
      const done = turn(text)
      busy(busyMs)
      await done
    },
    pid: c.pid,
    stop: c.stop
  }
}
