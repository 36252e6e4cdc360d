/**
 * Checkpoints of a thread's workspace, as the runtime uses them: a git checkpoint
 * after each completed run when the workspace is a git repository (see
 * GitCheckpoints: hidden refs, a temporary index, the user's repository untouched),
 * nothing for any other directory (the run's checkpoint stays logical), and a restore
 * for `thread.rollback { restoreFiles }`. Whether a directory is a repository is
 * asked once per workspace.
 *
 * Each workspace's commits and refs go through a long-lived GitWriter, kept while
 * checkpoints keep coming and closed a minute after the last one; a writer that failed
 * is dropped (that checkpoint fails with git's words) and the next capture starts a
 * fresh one.
 */
import type { CommandExecutor } from "@effect/platform/CommandExecutor"
import { NodeContext } from "@effect/platform-node"
import type { DiffEntry, RestoreOutcome, ThreadId } from "@skein/domain"
import { GitFailed } from "@skein/domain"
import { Context, Duration, Effect, Layer, Option } from "effect"
import * as RcRegistry from "../actors/RcRegistry.js"
import * as GitCheckpoints from "./GitCheckpoints.js"
import * as GitRestore from "./GitRestore.js"
import * as GitWriter from "./GitWriter.js"

/** How long a workspace's writer processes outlive its last checkpoint. */
const WRITER_IDLE = Duration.minutes(1)

export interface CapturedCheckpoint {
  readonly gitRef: string
  readonly commit: string
  readonly tree: string
  readonly diff: ReadonlyArray<DiffEntry>
}

export interface WorkspaceCheckpointsShape {
  /** Whether the workspace is in a git repository (asked of git once per workspace). */
  readonly isRepository: (workspace: string) => Effect.Effect<boolean, GitFailed>
  /** A git checkpoint of the workspace after run `ordinal`; None when it is not a repository. */
  readonly capture: (input: {
    readonly workspace: string
    readonly threadId: ThreadId
    readonly ordinal: number
    /** The previous checkpoint's commit (read only when the workspace is a repository). */
    readonly previous: Effect.Effect<string | null, GitFailed>
  }) => Effect.Effect<Option.Option<CapturedCheckpoint>, GitFailed>
  /** Writes the checkpoint's files back to the work tree (STUB until the git level lands). */
  readonly restore: (input: {
    readonly workspace: string
    readonly threadId: ThreadId
    readonly commit: string
    readonly toRunOrdinal: number
    readonly restoreId: string
    readonly dryRun: boolean
  }) => Effect.Effect<RestoreOutcome, GitFailed>
  readonly checkpointExists: (workspace: string, commit: string) => Effect.Effect<boolean, GitFailed>
  readonly dropCheckpointsAfter: (
    workspace: string,
    threadId: ThreadId,
    ordinal: number
  ) => Effect.Effect<void, GitFailed>
}

export class WorkspaceCheckpoints extends Context.Tag("@skein/runtime/WorkspaceCheckpoints")<
  WorkspaceCheckpoints,
  WorkspaceCheckpointsShape
>() {
  static readonly layer: Layer.Layer<WorkspaceCheckpoints> = Layer.scoped(
    WorkspaceCheckpoints,
    Effect.gen(function* () {
      // The command executor, built once with the layer.
      const context = yield* Effect.context<CommandExecutor>()
      const writers = yield* RcRegistry.make({
        lookup: (workspace: string) => GitWriter.make(workspace),
        idleTimeToLive: WRITER_IDLE
      })
      /** The capture, through the workspace's writer; a writer that failed is dropped. */
      const captureWith = (input: Parameters<typeof GitCheckpoints.capture>[0]) =>
        Effect.scoped(
          Effect.flatMap(writers.get(input.workspace), (writer) =>
            GitCheckpoints.capture({ ...input, writer }).pipe(
              Effect.ensuring(
                Effect.suspend(() => (writer.broken() ? writers.invalidate(input.workspace) : Effect.void))
              )
            )
          )
        )
      const repositories = new Map<string, boolean>()
      const failed = (workspace: string) => (error: GitCheckpoints.GitError) =>
        new GitFailed({ workspace, detail: error.message })
      const isRepository = (workspace: string) => {
        const known = repositories.get(workspace)
        if (known !== undefined) return Effect.succeed(known)
        return GitCheckpoints.repositoryOf(workspace).pipe(
          Effect.map(Option.isSome),
          Effect.tap((is) => Effect.sync(() => repositories.set(workspace, is)))
        )
      }
      return {
        isRepository: (workspace) =>
          repositories.get(workspace) === false
            ? Effect.succeed(false)
            : isRepository(workspace).pipe(Effect.mapError(failed(workspace)), Effect.provide(context)),
        capture: (input) =>
          // Most workspaces are not repositories: known once, answered at once after.
          repositories.get(input.workspace) === false
            ? Effect.succeedNone
            : Effect.gen(function* () {
                if (!(yield* isRepository(input.workspace))) return Option.none()
                const previous = yield* input.previous
                const taken = yield* captureWith({ ...input, previous }).pipe(Effect.mapError(failed(input.workspace)))
                return Option.some({ gitRef: taken.ref, commit: taken.commit, tree: taken.tree, diff: taken.diff })
              }).pipe(
                Effect.catchTag("GitError", (error) => Effect.fail(failed(input.workspace)(error))),
                Effect.provide(context)
              ),
        restore: (input) =>
          Effect.scoped(
            GitRestore.restore({
              workspace: input.workspace,
              commit: input.commit,
              toRunOrdinal: input.toRunOrdinal,
              backupRef: GitCheckpoints.backupRefOf(input.threadId, input.restoreId),
              dryRun: input.dryRun,
              omitted: [],
              temporaryIndex: GitCheckpoints.temporaryIndex(input.workspace)
            })
          ).pipe(Effect.mapError(failed(input.workspace)), Effect.provide(context)),
        checkpointExists: (workspace, commit) =>
          GitCheckpoints.commitExists(workspace, commit).pipe(
            Effect.mapError(failed(workspace)),
            Effect.provide(context)
          ),
        dropCheckpointsAfter: (workspace, threadId, ordinal) =>
          GitCheckpoints.dropAfter({ workspace, threadId, ordinal }).pipe(
            Effect.mapError(failed(workspace)),
            Effect.provide(context)
          )
      } satisfies WorkspaceCheckpointsShape
    })
  ).pipe(Layer.provide(NodeContext.layer))
}
