/**
 * How the next process of a Claude session must be started, until the session has a
 * turn on disk. Claude Code writes a session only with its first message: a new
 * session (`--session-id`), a fork (`--fork-session`) and a rewind
 * (`--resume-session-at`) exist only in the flags of the process that will write that
 * message. So the driver remembers them here, in a small JSON file in the instance's
 * state directory, and forgets each once a turn on it has ended: a restart of Skein or
 * of the process in between still starts the session the way it was meant to be.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

export type Launch =
  | { readonly kind: "new" }
  | { readonly kind: "fork"; readonly from: string; readonly at: string | null }
  | { readonly kind: "rewind"; readonly at: string }

export interface Launches {
  readonly get: (sessionId: string) => Launch | undefined
  readonly set: (sessionId: string, launch: Launch) => void
  readonly clear: (sessionId: string) => void
}

/** The CLI arguments that start session `sessionId` as planned. */
export const launchArgs = (sessionId: string, launch: Launch | undefined): Array<string> => {
  if (launch === undefined) return ["--resume", sessionId]
  switch (launch.kind) {
    case "new":
      return ["--session-id", sessionId]
    case "fork":
      return [
        "--resume",
        launch.from,
        "--fork-session",
        "--session-id",
        sessionId,
        ...(launch.at === null ? [] : ["--resume-session-at", launch.at])
      ]
    case "rewind":
      return ["--resume", sessionId, "--resume-session-at", launch.at]
  }
}

export const makeLaunches = (stateDir: string): Launches => {
  const file = Path.join(stateDir, "claude-launches.json")
  let cache: Record<string, Launch> | null = null
  const load = (): Record<string, Launch> => {
    if (cache !== null) return cache
    try {
      cache = JSON.parse(Fs.readFileSync(file, "utf8")) as Record<string, Launch>
    } catch {
      cache = {}
    }
    return cache
  }
  const save = () => {
    Fs.mkdirSync(stateDir, { recursive: true })
    const temp = `${file}.${process.pid}.tmp`
    Fs.writeFileSync(temp, JSON.stringify(cache ?? {}), { mode: 0o600 })
    Fs.renameSync(temp, file)
  }
  return {
    get: (sessionId) => load()[sessionId],
    set: (sessionId, launch) => {
      load()[sessionId] = launch
      save()
    },
    clear: (sessionId) => {
      const all = load()
      if (!(sessionId in all)) return
      delete all[sessionId]
      save()
    }
  }
}
