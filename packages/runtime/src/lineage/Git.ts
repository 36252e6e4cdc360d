/**
 * Running git: one process per command (see `gitRaw`), with argument arrays (no
 * shell), a closed environment (PATH, HOME, an optional temporary index, a fixed author
 * and committer; nothing else inherited, so no `GIT_DIR` or locale leaks in), and typed
 * errors that say what to do.
 */
import type { PlatformError } from "@effect/platform/Error"
import { Context, Effect, Schema } from "effect"
import * as NodeChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"

/** A git command could not run or failed. The message says what to do. */
export class GitError extends Schema.TaggedError<GitError>()("GitError", {
  /** What was run, e.g. `git add -A`. */
  command: Schema.String,
  detail: Schema.String,
  /** `missing`: no git executable could be started; `failed`: it ran and refused, or the input was unusable. */
  reason: Schema.Literal("missing", "failed")
}) {
  override get message() {
    return this.reason === "missing"
      ? `git could not be started (${this.detail}). Install git and put it on the PATH, or keep using logical checkpoints.`
      : `${this.command} failed: ${this.detail}`
  }
}

/** The git executable to run: `git` on the PATH unless provided otherwise. */
export class GitExecutable extends Context.Reference<GitExecutable>()("@skein/runtime/GitExecutable", {
  defaultValue: (): string => "git"
}) {}

// ---------------------------------------------------------------------------------------
// Running git

export interface GitRun {
  readonly cwd: string
  /** GIT_INDEX_FILE; the repository's own index is never named here. */
  readonly index?: string
  /**
   * GIT_OBJECT_DIRECTORY, with the repository's own objects as an alternate: new objects
   * go there and nowhere else (a dry run's), everything the repository holds is readable.
   */
  readonly objects?: { readonly directory: string; readonly repository: string } | undefined
  readonly stdin?: string
}

export interface GitOutput {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** The only environment git sees. */
export const environment = (
  index: string | undefined,
  objects?: GitRun["objects"]
): Record<string, string | undefined> => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME ?? Os.homedir(),
  GIT_INDEX_FILE: index,
  GIT_OBJECT_DIRECTORY: objects?.directory,
  GIT_ALTERNATE_OBJECT_DIRECTORIES: objects?.repository,
  GIT_AUTHOR_NAME: "Skein",
  GIT_AUTHOR_EMAIL: "skein@localhost",
  GIT_COMMITTER_NAME: "Skein",
  GIT_COMMITTER_EMAIL: "skein@localhost",
  // Never refresh the user's index as a side effect, never prompt.
  GIT_OPTIONAL_LOCKS: "0",
  GIT_TERMINAL_PROMPT: "0"
})

/**
 * Unusual file names verbatim; no split index (which would write a shared index file
 * beside the repository's own); no automatic gc started by a checkpoint.
 */
export const settings = ["-c", "core.quotepath=off", "-c", "core.splitIndex=false", "-c", "gc.auto=0"]

export const describe = (args: ReadonlyArray<string>) => `git ${args.join(" ")}`

export const fromPlatform = (args: ReadonlyArray<string>, cwd: string, executable: string) => (error: PlatformError) =>
  error._tag === "SystemError" && error.module === "Command" && error.method === "spawn"
    ? new GitError({
        command: describe(args),
        detail: `${executable}: ${error.reason === "NotFound" ? "not found" : error.message}`,
        reason: "missing"
      })
    : error._tag === "SystemError" && error.method === "access"
      ? new GitError({ command: describe(args), detail: `the directory ${cwd} cannot be used`, reason: "failed" })
      : new GitError({ command: describe(args), detail: error.message, reason: "failed" })

/**
 * Runs git to its end and gives its exit code and output, whatever the code. A process
 * of its own group (killed with it when the effect is interrupted), spawned with
 * node:child_process rather than @effect/platform's Command (the long-lived writer's
 * processes still use Command): a checkpoint runs git three times on the way to a run's
 * answer, and Command's stream machinery and its check of the working directory (here
 * made only when a spawn fails) cost more than a short git command does (a
 * `git write-tree` takes some 1.7 times as long through it).
 */
export const gitRaw = (args: ReadonlyArray<string>, run: GitRun): Effect.Effect<GitOutput, GitError, never> =>
  Effect.flatMap(GitExecutable, (executable) =>
    Effect.async<GitOutput, GitError>((resume) => {
      const failed = (detail: string, reason: "missing" | "failed" = "failed") =>
        resume(Effect.fail(new GitError({ command: describe(args), detail, reason })))
      const env: Record<string, string> = {}
      for (const [name, value] of Object.entries(environment(run.index, run.objects)))
        if (value !== undefined) env[name] = value
      let child: NodeChildProcess.ChildProcess
      try {
        child = NodeChildProcess.spawn(executable, [...settings, ...args], {
          cwd: run.cwd,
          env,
          stdio: ["pipe", "pipe", "pipe"],
          detached: process.platform !== "win32"
        })
      } catch (error) {
        failed(`${executable}: ${error instanceof Error ? error.message : String(error)}`, "missing")
        return
      }
      const stdout: Array<Buffer> = []
      const stderr: Array<Buffer> = []
      let done = false
      child.stdout!.on("data", (chunk: Buffer) => void stdout.push(chunk))
      child.stderr!.on("data", (chunk: Buffer) => void stderr.push(chunk))
      child.stdin!.on("error", () => {
        // git may exit before reading all of its input; its exit says how it went.
      })
      child.on("error", (error: NodeJS.ErrnoException) => {
        if (done) return
        done = true
        // A spawn fails with ENOENT for a missing executable and for a missing working
        // directory alike: which one, the directory says.
        if (error.code === "ENOENT" && !Fs.existsSync(run.cwd)) return failed(`the directory ${run.cwd} cannot be used`)
        return failed(`${executable}: ${error.code === "ENOENT" ? "not found" : error.message}`, "missing")
      })
      child.on("close", (code, signal) => {
        if (done) return
        done = true
        if (code === null) return failed(`git was stopped by ${signal ?? "a signal"}`)
        resume(
          Effect.succeed({
            code,
            stdout: Buffer.concat(stdout).toString("utf8"),
            stderr: Buffer.concat(stderr).toString("utf8")
          })
        )
      })
      child.stdin!.end(run.stdin)
      return Effect.sync(() => {
        if (done || child.pid === undefined) return
        try {
          process.kill(process.platform === "win32" ? child.pid : -child.pid, "SIGTERM")
        } catch {
          child.kill("SIGTERM")
        }
      })
    })
  )

export const notARepository = /not a git repository|must be run in a work tree/

/** Runs git and gives its standard output; a non-zero exit is a GitError with git's own words. */
export const git = (args: ReadonlyArray<string>, run: GitRun): Effect.Effect<string, GitError, never> =>
  Effect.flatMap(gitRaw(args, run), (out) =>
    out.code === 0
      ? Effect.succeed(out.stdout)
      : Effect.fail(
          new GitError({
            command: describe(args),
            detail:
              out.code === 128 && notARepository.test(out.stderr)
                ? `${run.cwd} is not inside a git work tree (it keeps logical checkpoints)`
                : out.stderr.trim() || `exit code ${out.code}`,
            reason: "failed"
          })
        )
  )
