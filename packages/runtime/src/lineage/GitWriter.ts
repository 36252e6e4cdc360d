/**
 * Writes checkpoint commits and moves their hidden refs in one repository.
 *
 * Two forms with the same face:
 * - `oneShot`: a `git commit-tree` and a `git update-ref` process per checkpoint;
 * - `make`: two long-lived git processes kept for a repository, fed one line per
 *   request: `git hash-object -t commit -w --stdin-paths` (a commit's text, written to a
 *   file of the writer's own temporary directory, hashed and stored as an object, exactly
 *   as `commit-tree` stores it) and `git update-ref --stdin` (one transaction per ref:
 *   `start`, `update`, `prepare`, `commit`, each acknowledged; the ref is on disk when
 *   `commit: ok` arrives). A checkpoint then costs two pipe round trips instead of two
 *   process start-ups, which on a small change is most of its time.
 *
 * Requests to one writer are served one at a time. A process that exits or answers
 * something unexpected fails that request with a GitError carrying git's own words, and
 * the writer answers that error from then on: its holder replaces it (see
 * WorkspaceCheckpoints). Closing the writer's scope ends both processes.
 */
import { Command } from "@effect/platform"
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { Deferred, Duration, Effect, Queue, Stream } from "effect"
import type { Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as TemporaryDirectories from "./TemporaryDirectories.js"
import { describe, environment, fromPlatform, git, GitError, GitExecutable, settings } from "./Git.js"

export interface GitWriter {
  /** Stores a commit of `tree` with these parents and message; gives its id. */
  readonly commit: (input: {
    readonly tree: string
    readonly parents: ReadonlyArray<string>
    readonly message: string
  }) => Effect.Effect<string, GitError, CommandExecutor>
  /** Points `ref` at `commit` (creating or replacing it); done when the ref is on disk. */
  readonly setRef: (ref: string, commit: string) => Effect.Effect<void, GitError, CommandExecutor>
  /** Whether the writer still works; a broken one answers every request with its error. */
  readonly broken: () => boolean
}

/** How long a long-lived process may take to answer one request. */
const ANSWER_TIMEOUT = Duration.seconds(30)

/** A process per request: `git commit-tree`, `git update-ref`. */
export const oneShot = (cwd: string): GitWriter => ({
  commit: ({ message, parents, tree }) =>
    Effect.map(
      git(["commit-tree", "--no-gpg-sign", ...parents.flatMap((parent) => ["-p", parent]), "-m", message, tree], {
        cwd
      }),
      (out) => out.trim()
    ),
  setRef: (ref, commit) => Effect.asVoid(git(["update-ref", "--no-deref", ref, commit], { cwd })),
  broken: () => false
})

/** The text of a commit object as `git commit-tree` writes it (author and committer from the environment). */
const commitText = (input: {
  readonly tree: string
  readonly parents: ReadonlyArray<string>
  readonly message: string
}) => {
  const env = environment(undefined)
  const when = `${Math.floor(Date.now() / 1000)} +0000`
  return [
    `tree ${input.tree}`,
    ...input.parents.map((parent) => `parent ${parent}`),
    `author ${env.GIT_AUTHOR_NAME} <${env.GIT_AUTHOR_EMAIL}> ${when}`,
    `committer ${env.GIT_COMMITTER_NAME} <${env.GIT_COMMITTER_EMAIL}> ${when}`,
    "",
    input.message.endsWith("\n") ? input.message : `${input.message}\n`
  ].join("\n")
}

/** One long-lived git process: write lines to it, read its answer lines in order. */
const lineProcess = (args: ReadonlyArray<string>, cwd: string) =>
  Effect.gen(function* () {
    const executable = yield* GitExecutable
    const input = yield* Queue.unbounded<string>()
    const command = Command.make(executable, ...settings, ...args).pipe(
      Command.workingDirectory(cwd),
      // GIT_FLUSH: answer each line at once, whatever git thinks of the pipe.
      Command.env({ ...environment(undefined), GIT_FLUSH: "1" }, { extendEnv: false }),
      Command.stdin(Stream.fromQueue(input).pipe(Stream.encodeText))
    )
    const process = yield* Command.start(command).pipe(Effect.mapError(fromPlatform(args, cwd, executable)))
    // Answers, then `null` once standard output ended (the process is gone).
    const answers = yield* Queue.unbounded<string | null>()
    let stderr = ""
    const stderrEnded = yield* Deferred.make<void>()
    yield* process.stdout.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((line) => Queue.offer(answers, line)),
      Effect.ignore,
      Effect.zipRight(Queue.offer(answers, null)),
      Effect.forkScoped
    )
    yield* process.stderr.pipe(
      Stream.decodeText(),
      Stream.runForEach((text) => Effect.sync(() => void (stderr = (stderr + text).slice(-4096)))),
      Effect.ignore,
      Effect.ensuring(Deferred.succeed(stderrEnded, undefined)),
      Effect.forkScoped
    )
    const failed = (detail: string) => new GitError({ command: describe(args), detail, reason: "failed" })
    const answer: Effect.Effect<string, GitError> = Queue.take(answers).pipe(
      Effect.flatMap((line) =>
        line === null
          ? Effect.zipRight(
              // Gone: later readers hear the same.
              Queue.offer(answers, null),
              // Its last words are on standard error, which ends with the process.
              Deferred.await(stderrEnded).pipe(
                Effect.timeout(Duration.seconds(2)),
                Effect.ignore,
                Effect.zipRight(
                  Effect.suspend(() => Effect.fail(failed(stderr.trim() || "git exited without answering")))
                )
              )
            )
          : Effect.succeed(line)
      ),
      Effect.timeoutFail({
        duration: ANSWER_TIMEOUT,
        onTimeout: () => failed(`no answer in ${Duration.format(ANSWER_TIMEOUT)}`)
      })
    )
    return { send: (text: string) => Queue.offer(input, text), answer }
  })

/** Long-lived processes for the repository holding `cwd`, ended with the scope. */
export const make = (cwd: string): Effect.Effect<GitWriter, GitError, Scope.Scope | CommandExecutor> =>
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.try({
        try: () => TemporaryDirectories.make("skein-git-writer"),
        catch: (error) =>
          new GitError({ command: "create a temporary directory", detail: String(error), reason: "failed" })
      }),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    )
    const objects = yield* lineProcess(["hash-object", "-t", "commit", "-w", "--stdin-paths"], cwd)
    const refs = yield* lineProcess(["update-ref", "--no-deref", "--stdin"], cwd)
    const lock = yield* Effect.makeSemaphore(1)
    let broken: GitError | null = null
    let written = 0

    /** One request at a time; the first failure breaks the writer for good. */
    const serve = <A>(request: Effect.Effect<A, GitError>): Effect.Effect<A, GitError> =>
      lock.withPermits(1)(
        Effect.suspend(() => (broken === null ? request : Effect.fail(broken))).pipe(
          Effect.tapError((error) => Effect.sync(() => void (broken ??= error))),
          // Cut half-way, the process's next answer would go to the wrong request.
          Effect.onInterrupt(() =>
            Effect.sync(
              () =>
                void (broken ??= new GitError({
                  command: "git checkpoint writer",
                  detail: "a request was interrupted",
                  reason: "failed"
                }))
            )
          )
        )
      )

    const expect = (process: typeof refs, wanted: string) =>
      Effect.flatMap(process.answer, (line) =>
        line === wanted
          ? Effect.void
          : Effect.fail(new GitError({ command: "git update-ref --stdin", detail: line, reason: "failed" }))
      )

    return {
      commit: (input) =>
        serve(
          Effect.gen(function* () {
            const file = Path.join(dir, `commit-${written++}`)
            yield* Effect.try({
              try: () => Fs.writeFileSync(file, commitText(input)),
              catch: (error) =>
                new GitError({ command: "write a commit's text", detail: String(error), reason: "failed" })
            })
            yield* objects.send(`${file}\n`)
            const id = yield* objects.answer
            yield* Effect.sync(() => Fs.rmSync(file, { force: true }))
            return /^[0-9a-f]{40,64}$/.test(id)
              ? id
              : yield* Effect.fail(new GitError({ command: "git hash-object -t commit", detail: id, reason: "failed" }))
          })
        ),
      setRef: (ref, commit) =>
        serve(
          Effect.gen(function* () {
            yield* refs.send(`start\nupdate ${ref} ${commit}\nprepare\ncommit\n`)
            yield* expect(refs, "start: ok")
            yield* expect(refs, "prepare: ok")
            yield* expect(refs, "commit: ok")
          })
        ),
      broken: () => broken !== null
    } satisfies GitWriter
  })
