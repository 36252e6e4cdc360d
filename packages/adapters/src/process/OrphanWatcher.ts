/**
 * The process groups this process started, ended even if it dies without closing them.
 *
 * A line-protocol child is ended by its Scope (LineProcess.ts), but a scope's finalizers
 * do not run when this process is killed (SIGKILL, the OOM killer, a native crash). Its
 * children then see their stdin close, and what they do next is up to them: Codex's
 * app-server exits at once, while Claude Code finishes the turn it is on first, tools and
 * all, with nobody left to read what it does or to stop it (measured on the pinned
 * binary: some 29 s for the rest of a 30 s turn).
 *
 * So one small watcher process per Node process (started with the first child, not
 * waited for) holds the other end of a pipe from this process, and is told each child's
 * process group as it starts and once its scope has ended it. When the pipe closes
 * without a word, because this process died, the watcher sends SIGTERM to every group
 * still listed, SIGKILL after a grace period, and exits. It ignores the signals a
 * terminal sends, so a Ctrl-C that kills this process cannot kill it first; it runs
 * `node -e` on a fixed program from an argument array, and reads nothing but group
 * numbers from the pipe. Neither it nor the pipe keeps this process's event loop alive.
 *
 * Where the watcher cannot start (no executable at `process.execPath`), children are
 * watched by their scopes alone, as before; the failure is reported once.
 */
import * as NodeChildProcess from "node:child_process"
import type { Socket } from "node:net"

/** The watcher: group numbers in (`+N` started, `-N` ended), the groups still listed ended on EOF. */
const WATCHER = `
const groups = new Set()
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"]) process.on(signal, () => {})
let buffer = ""
const take = (line) => {
  const group = Number(line.slice(1))
  if (!Number.isSafeInteger(group) || group <= 1) return
  if (line[0] === "+") groups.add(group)
  else if (line[0] === "-") groups.delete(group)
}
const signal = (name) => {
  for (const group of groups) {
    try { process.kill(-group, name) } catch { groups.delete(group) }
  }
}
let ending = false
const end = () => {
  if (ending) return
  ending = true
  if (groups.size === 0) process.exit(0)
  signal("SIGTERM")
  setTimeout(() => { signal("SIGKILL"); process.exit(0) }, Number(process.argv[1]))
}
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let newline = buffer.indexOf("\\n")
  while (newline >= 0) {
    take(buffer.slice(0, newline))
    buffer = buffer.slice(newline + 1)
    newline = buffer.indexOf("\\n")
  }
})
process.stdin.on("end", end)
process.stdin.on("error", end)
`

/** How long the watcher waits after SIGTERM before SIGKILL. */
const GRACE_MS = 2000

interface Watcher {
  readonly pid: number | undefined
  readonly tell: (line: string) => void
}

/** The watcher of this process, started on first use; null when it could not start. */
let watcher: Watcher | null | undefined

const warn = (why: unknown) =>
  process.emitWarning(`skein: no watcher for child processes (${String(why)}); they end with their scopes only`)

const startWatcher = (): Watcher | null => {
  let child: NodeChildProcess.ChildProcess
  try {
    child = NodeChildProcess.spawn(process.execPath, ["-e", WATCHER, String(GRACE_MS)], {
      stdio: ["pipe", "ignore", "ignore"],
      shell: false,
      detached: true,
      // Nothing of this process's environment is needed to send signals. (Electron's
      // executable runs as Node only when told to.)
      env: process.versions.electron === undefined ? {} : { ELECTRON_RUN_AS_NODE: "1" }
    })
  } catch (error) {
    warn(error)
    return null
  }
  // A pipe: a socket, which can be unref'd.
  const stdin = child.stdin as Socket
  let usable = true
  const unusable = (error: unknown) => {
    if (!usable) return
    usable = false
    watcher = null
    warn(error)
  }
  child.on("error", unusable)
  stdin.on("error", unusable)
  child.on("exit", (code, signal) => unusable(`the watcher exited (${signal ?? `code ${code}`})`))
  // The watcher lives as long as this process, but does not hold it alive.
  child.unref()
  stdin.unref()
  return {
    pid: child.pid,
    tell: (line) => {
      if (usable) stdin.write(line)
    }
  }
}

/**
 * Lists the process group led by `pid` with this process's watcher, until the returned
 * function is called (once the group has been ended, or is known to be gone).
 */
export const watchGroup = (pid: number): (() => void) => {
  if (watcher === undefined) watcher = startWatcher()
  const current = watcher
  if (current === null || !Number.isSafeInteger(pid) || pid <= 1) return () => {}
  current.tell(`+${pid}\n`)
  let listed = true
  return () => {
    if (!listed) return
    listed = false
    watcher?.tell(`-${pid}\n`)
  }
}

/** The watcher's PID, once it runs (for diagnostics and tests). */
export const watcherPid = (): number | null => watcher?.pid ?? null
