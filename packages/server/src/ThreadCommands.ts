/**
 * The commands that make and read threads: `thread new`, `threads`, `show`, `follow`,
 * `handoff` and `providers`.
 */
import * as Path from "node:path"
import {
  AppThread,
  ContextHandoff,
  ContextHandoffId,
  CreateThreadFields,
  InvalidInput,
  ProviderInstanceInfo,
  StoredEvent,
  ThreadId,
  ThreadView
} from "@skein/domain"
import { Console, Effect, Option, Schema, Stream } from "effect"
import {
  checked,
  type Connection,
  decodeThreadId,
  type Json,
  type OnThread,
  printJson,
  printLines,
  withClient
} from "./CliClient.js"
import { followThread } from "./Client.js"
import { eventLine, handoffRecordLines, providerLines, showLines, threadListLines } from "./Presentation.js"

export const threadNew = (
  o: Connection & Json & { readonly title: Option.Option<string>; readonly workspace: Option.Option<string> }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const payload = yield* checked(
        Schema.Struct(CreateThreadFields),
        {
          ...(Option.isSome(o.title) ? { title: o.title.value } : {}),
          // A relative directory is the user's, from where they are.
          ...(Option.isSome(o.workspace) ? { workspace: Path.resolve(o.workspace.value) } : {})
        },
        { title: "--title", workspace: "--workspace" }
      )
      const thread = yield* client.thread.create(payload)
      yield* o.json ? printJson(Schema.encodeSync(AppThread)(thread)) : Console.log(thread.id)
    })
  )

export const threads = (
  o: Connection &
    Json & {
      readonly root: Option.Option<string>
      readonly parent: Option.Option<string>
      readonly limit: Option.Option<number>
    }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const filter = yield* checked(
        Schema.Struct({ rootThreadId: Schema.optional(ThreadId), parentThreadId: Schema.optional(ThreadId) }),
        {
          ...(Option.isSome(o.root) ? { rootThreadId: o.root.value } : {}),
          ...(Option.isSome(o.parent) ? { parentThreadId: o.parent.value } : {})
        },
        { rootThreadId: "--root", parentThreadId: "--parent" }
      )
      const all = yield* client.thread.list(filter)
      const limit = Option.getOrElse(o.limit, () => 50)
      const recent = [...all].sort((a, b) => (a.updatedAt > b.updatedAt ? -1 : a.updatedAt < b.updatedAt ? 1 : 0))
      const shown = recent.slice(0, Math.max(0, limit))
      if (o.json) return yield* printJson(shown.map((t) => Schema.encodeSync(AppThread)(t)))
      if (all.length === 0) return yield* Console.log("no threads yet: make one with skein thread new")
      yield* printLines(threadListLines(shown))
      if (shown.length < all.length) yield* Console.log(`… ${all.length - shown.length} more (--limit N shows more)`)
    })
  )

export const show = (o: OnThread & { readonly messages: boolean }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const view = yield* client.thread.get({ threadId: yield* decodeThreadId(o.thread) })
      yield* o.json
        ? printJson(Schema.encodeSync(ThreadView)(view))
        : printLines(showLines(view, { messages: o.messages }))
    })
  )

export const follow = (o: OnThread & { readonly limit: Option.Option<number>; readonly from: Option.Option<number> }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const threadId = yield* decodeThreadId(o.thread)
      if (Option.isSome(o.from) && o.from.value < 1) {
        return yield* new InvalidInput({ detail: `--from: an event number is 1 or more, not ${o.from.value}` })
      }
      // --from N starts at event N: the stream delivers the events after a sequence.
      const events = followThread(client, {
        threadId,
        fromSequence: Option.match(o.from, { onNone: () => 0, onSome: (n) => Math.max(0, n - 1) })
      })
      const bounded = Option.match(o.limit, { onNone: () => events, onSome: (n) => Stream.take(events, n) })
      yield* Stream.runForEach(bounded, (e) =>
        o.json ? printJson(Schema.encodeSync(StoredEvent)(e)) : Console.log(eventLine(e))
      )
    })
  )

export const handoff = (o: Connection & Json & { readonly id: string }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const handoffId = yield* checked(ContextHandoffId, o.id, { "": "ID" })
      const record = yield* client.handoff.get({ handoffId })
      if (o.json) return yield* printJson(Schema.encodeSync(ContextHandoff)(record))
      // What it carried (a handoff between providers, a merge-back, a subagent's result …) is its transfer's type.
      const view = yield* client.thread.get({ threadId: record.threadId, items: false })
      yield* printLines(
        handoffRecordLines(
          record,
          view.transfers.find((x) => x.id === record.transferId)
        )
      )
    })
  )

export const providers = (o: Connection & Json) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const list = yield* client.provider.list()
      yield* o.json
        ? printJson(list.map((p) => Schema.encodeSync(ProviderInstanceInfo)(p)))
        : printLines(providerLines(list))
    })
  )
