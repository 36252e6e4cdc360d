/**
 * The lineage commands: `fork`, `merge-back`, `rollback` and `tree`.
 */
import {
  AppThread,
  ContextTransfer,
  ForkThreadFields,
  InvalidInput,
  RollbackFields,
  RollbackView,
  type ThreadId,
  ThreadView
} from "@skein/domain"
import { Console, Effect, Option, Schema } from "effect"
import {
  checked,
  type Connection,
  decodeThreadId,
  type Json,
  type OnThread,
  printJson,
  printLines,
  runRef,
  withClient
} from "./CliClient.js"
import { type LineageNode, rollbackLines, treeLines } from "./Presentation.js"

export const fork = (
  o: OnThread & {
    readonly run: Option.Option<string>
    readonly checkpoint: Option.Option<string>
    readonly sideChat: boolean
    readonly title: Option.Option<string>
  }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const threadId = yield* decodeThreadId(o.thread)
      let sourcePoint: unknown = "latest_stable"
      if (Option.isSome(o.run)) {
        const ref = yield* runRef(o.run.value)
        if ("runId" in ref) sourcePoint = { runId: ref.runId }
        else {
          const view = yield* client.thread.get({
            threadId,
            runs: { after: Math.max(0, ref.ordinal - 1), limit: 1 },
            items: false
          })
          const run = view.runs.find((r) => r.ordinal === ref.ordinal)
          if (run === undefined) {
            return yield* new InvalidInput({
              detail: `--run: thread ${threadId} has no run ${ref.ordinal} (it has ${view.page?.runCount ?? view.runs.length})`
            })
          }
          sourcePoint = { runId: run.id }
        }
      } else if (Option.isSome(o.checkpoint)) sourcePoint = { checkpointId: o.checkpoint.value }
      const payload = yield* checked(
        Schema.Struct(ForkThreadFields),
        {
          sourceThreadId: threadId,
          sourcePoint,
          ...(o.sideChat ? { sideChat: true } : {}),
          ...(Option.isSome(o.title) ? { title: o.title.value } : {})
        },
        { "sourcePoint.checkpointId": "--checkpoint", title: "--title" }
      )
      const forked = yield* client.thread.fork(payload)
      yield* o.json ? printJson(Schema.encodeSync(AppThread)(forked.thread)) : Console.log(forked.thread.id)
    })
  )

export const mergeBack = (o: Connection & Json & { readonly fork: string }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const transfer = yield* client.thread.mergeBack({ forkThreadId: yield* decodeThreadId(o.fork, "FORK") })
      yield* o.json
        ? printJson(Schema.encodeSync(ContextTransfer)(transfer))
        : Console.log(
            `${transfer.id} merge_back ${transfer.status} into ${transfer.targetThreadId}: its next run receives the fork's work`
          )
    })
  )

export const rollback = (
  o: OnThread & { readonly to: string; readonly restoreFiles: boolean; readonly dryRun: boolean }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const threadId = yield* decodeThreadId(o.thread)
      const ref = yield* runRef(o.to)
      let toRunOrdinal: number
      if ("ordinal" in ref) toRunOrdinal = ref.ordinal
      else {
        const view = yield* client.thread.get({ threadId, items: false })
        const run = view.runs.find((r) => r.id === ref.runId)
        if (run === undefined) {
          return yield* new InvalidInput({ detail: `RUN: ${ref.runId} is not a run of thread ${threadId}` })
        }
        toRunOrdinal = run.ordinal
      }
      if (o.dryRun && !o.restoreFiles) {
        return yield* new InvalidInput({ detail: "--dry-run goes with --restore-files (it previews a file restore)" })
      }
      const payload = yield* checked(
        Schema.Struct(RollbackFields),
        {
          threadId,
          toRunOrdinal,
          ...(o.restoreFiles ? { restoreFiles: true } : {}),
          ...(o.dryRun ? { dryRun: true } : {})
        },
        { toRunOrdinal: "RUN" }
      )
      const view = yield* client.thread.rollback(payload)
      yield* o.json ? printJson(Schema.encodeSync(RollbackView)(view)) : printLines(rollbackLines(view, toRunOrdinal))
    })
  )

export const tree = (o: OnThread) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const load = (threadId: ThreadId, depth: number): Effect.Effect<LineageNode, unknown> =>
        Effect.gen(function* () {
          const view = yield* client.thread.get({ threadId })
          const children =
            depth >= 32 ? [] : yield* Effect.forEach(view.children, (c) => load(c.id, depth + 1), { concurrency: 4 })
          return { view, children }
        })
      const root = yield* load(yield* decodeThreadId(o.thread), 0)
      const encode = (node: LineageNode): unknown => ({
        thread: Schema.encodeSync(ThreadView)(node.view),
        children: node.children.map(encode)
      })
      yield* o.json ? printJson(encode(root)) : printLines(treeLines(root))
    })
  )
