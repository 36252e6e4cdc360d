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
import type { DiffEntry, OmittedFile, RestoreOutcome, ThreadId } from "@skein/domain"
import { GitFailed } from "@skein/domain"
import { Context, Duration, Effect, Layer, Option } from "effect"
import * as RcRegistry from "../resources/RcRegistry.js"
import * as GitCheckpoints from "./GitCheckpoints.js"
import * as GitWriter from "./GitWriter.js"
import * as TemporaryDirectories from "./TemporaryDirectories.js"

/** How long a workspace's writer processes outlive its last checkpoint. */
const WRITER_IDLE = Duration.minutes(1)

export interface CapturedCheckpoint {
  readonly gitRef: string
  readonly commit: string
  readonly tree: string
  /** Paths relative to the repository's top level, the workspace's files only. */
  readonly diff: ReadonlyArray<DiffEntry>
  /** Files left out for their size (paths relative to the workspace). */
  readonly omitted: ReadonlyArray<OmittedFile>
}

export interface WorkspaceCheckpointsOptions {
  /** Files larger than this are left out of a checkpoint (default 50 MiB). */
  readonly maxFileBytes?: number | undefined
  /** Keep only the newest N checkpoint refs of a thread, pruning older ones after each capture (default all). */
  readonly keepRuns?: number | null | undefined
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
  /**
   * Makes the workspace's files match a checkpoint, after saving them as they were under
   * the thread's `restore-<restoreId>` ref (see GitCheckpoints.restore); the same
   * restoreId again finishes an interrupted restore with the same outcome. A dry run
   * changes nothing.
   */
  readonly restore: (input: {
    readonly workspace: string
    readonly threadId: ThreadId
    readonly commit: string
    readonly toRunOrdinal: number
    readonly restoreId: string
    readonly dryRun: boolean
  }) => Effect.Effect<RestoreOutcome, GitFailed>
  /**
   * Whether the repository still holds a checkpoint: its commit, and, when `ref` is
   * given, the ref still pointing at it (a pruned checkpoint's ref is gone, and git may
   * collect its commit at any time).
   */
  readonly checkpointExists: (
    workspace: string,
    commit: string,
    ref?: string | null
  ) => Effect.Effect<boolean, GitFailed>
  /** Deletes the thread's checkpoint refs after `ordinal`, as a rollback does (restore backups stay). */
  readonly dropCheckpointsAfter: (
    workspace: string,
    threadId: ThreadId,
    ordinal: number
  ) => Effect.Effect<void, GitFailed>
  /** Keeps the newest `keepRuns` checkpoint refs of the thread and its newest restore backups (3 unless told). */
  readonly prune: (
    workspace: string,
    threadId: ThreadId,
    options: { readonly keepRuns: number; readonly keepRestores?: number | undefined }
  ) => Effect.Effect<void, GitFailed>
}

export class WorkspaceCheckpoints extends Context.Tag("@skein/runtime/WorkspaceCheckpoints")<
  WorkspaceCheckpoints,
  WorkspaceCheckpointsShape
>() {
  /** The service; sweeps the temporary directories of dead processes when it starts. */
  static readonly layerWith = (options: WorkspaceCheckpointsOptions = {}): Layer.Layer<WorkspaceCheckpoints> =>
    Layer.scoped(
      WorkspaceCheckpoints,
      Effect.gen(function* () {
        yield* Effect.sync(() => TemporaryDirectories.sweep())
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
              GitCheckpoints.capture({ ...input, writer, maxFileBytes: options.maxFileBytes }).pipe(
                Effect.ensuring(
                  Effect.suspend(() => (writer.broken() ? writers.invalidate(input.workspace) : Effect.void))
                )
              )
            )
          )
        const repositories = new Map<string, boolean>()
        /** Where each repository workspace sits in its repository, asked once. */
        const places = new Map<string, GitCheckpoints.Place>()
        const placeOf = (workspace: string) => {
          const known = places.get(workspace)
          return known !== undefined
            ? Effect.succeed(known)
            : Effect.tap(GitCheckpoints.locate(workspace), (place) => Effect.sync(() => places.set(workspace, place)))
        }
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
        const git = <A>(workspace: string, effect: Effect.Effect<A, GitCheckpoints.GitError, CommandExecutor>) =>
          effect.pipe(Effect.mapError(failed(workspace)), Effect.provide(context))
        return {
          isRepository: (workspace) =>
            repositories.get(workspace) === false ? Effect.succeed(false) : git(workspace, isRepository(workspace)),
          capture: (input) =>
            // Most workspaces are not repositories: known once, answered at once after.
            repositories.get(input.workspace) === false
              ? Effect.succeedNone
              : Effect.gen(function* () {
                  if (!(yield* isRepository(input.workspace))) return Option.none()
                  const previous = yield* input.previous
                  const place = yield* placeOf(input.workspace)
                  const taken = yield* captureWith({ ...input, previous, place }).pipe(
                    Effect.mapError(failed(input.workspace))
                  )
                  if (options.keepRuns != null) {
                    // Retention: a failed prune only leaves refs behind.
                    yield* GitCheckpoints.prune({
                      workspace: input.workspace,
                      threadId: input.threadId,
                      keepRuns: options.keepRuns
                    }).pipe(
                      Effect.catchAll((error) =>
                        Effect.logWarning(`checkpoint refs of thread ${input.threadId} not pruned: ${error.message}`)
                      )
                    )
                  }
                  return Option.some({
                    gitRef: taken.ref,
                    commit: taken.commit,
                    tree: taken.tree,
                    diff: taken.diff,
                    omitted: taken.omitted
                  })
                }).pipe(
                  Effect.catchTag("GitError", (error) => Effect.fail(failed(input.workspace)(error))),
                  Effect.provide(context)
                ),
          restore: (input) => git(input.workspace, GitCheckpoints.restore(input)),
          checkpointExists: (workspace, commit, ref) =>
            git(workspace, GitCheckpoints.checkpointExists({ workspace, commit, ref })),
          dropCheckpointsAfter: (workspace, threadId, ordinal) =>
            git(workspace, GitCheckpoints.dropAfter({ workspace, threadId, ordinal })),
          prune: (workspace, threadId, options) =>
            git(workspace, GitCheckpoints.prune({ workspace, threadId, ...options }))
        } satisfies WorkspaceCheckpointsShape
      })
    ).pipe(Layer.provide(NodeContext.layer))

  static readonly layer: Layer.Layer<WorkspaceCheckpoints> = WorkspaceCheckpoints.layerWith()
}
