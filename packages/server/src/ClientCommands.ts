/**
 * What `call` and the human commands do (declared in `Cli.ts`, which imports this
 * module when one of them runs), and how every command reports a failure. Only the
 * typed client: nothing here imports the runtime, the adapters or SQLite.
 *
 * Each payload is checked against its method's schema before it is sent. Failures
 * print one line for a person on stderr (`skein: …`), or with `--json` (and always for
 * `call`) the typed error as JSON (`{"_tag":…,"message":…,…}`), and exit non-zero.
 */
import { RpcSchema } from "@effect/rpc"
import * as Path from "node:path"
import {
  AppThread,
  ContextHandoff,
  ContextHandoffId,
  ContextTransfer,
  CreateThreadFields,
  ForkThreadFields,
  InvalidInput,
  ProviderInstanceInfo,
  RespondApprovalFields,
  RollbackFields,
  RollbackView,
  Run,
  RunId,
  RunView,
  SkeinError,
  SkeinRpcs,
  SpawnSubagentFields,
  StartRunFields,
  StoredEvent,
  ThreadId,
  ThreadView,
  TurnItem
} from "@skein/domain"
import { Cause, Console, Effect, Option, ParseResult, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { CliExit } from "./CliExit.js"
import { colourFor, makeProgress, oneLine, paint } from "./CliStyle.js"
import { followThread, HandshakeRefused, makeSkeinClient, type SkeinClientShape } from "./Client.js"
import {
  eventLine,
  handoffRecordLines,
  itemHint,
  itemLine,
  providerLines,
  rollbackLines,
  runSummary,
  showLines,
  threadListLines,
  treeLines
} from "./Presentation.js"
import type { LineageNode } from "./Presentation.js"

const encodeSkeinError = Schema.encodeSync(SkeinError)

/** The JSON form of any failure: `_tag`, `message`, and the error's own fields. */
export const errorJson = (error: unknown, context: { readonly url?: string } = {}): Record<string, unknown> => {
  if (Schema.is(SkeinError)(error)) return { ...encodeSkeinError(error), message: error.message }
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tagged = error as { readonly _tag: string; readonly message?: unknown }
    if (tagged._tag === "RpcClientError") {
      const cause = (error as { readonly cause?: unknown }).cause
      if (cause instanceof HandshakeRefused) {
        return {
          _tag: cause.status === 401 ? "Unauthorized" : "ConnectionRefused",
          status: cause.status,
          message: cause.message
        }
      }
      return {
        _tag: "ConnectionFailed",
        message: `Could not reach Skein${context.url === undefined ? "" : ` at ${context.url}`}: ${String(tagged.message)}. Is the daemon running (skein daemon)?`
      }
    }
    return { _tag: tagged._tag, message: String(tagged.message ?? tagged._tag) }
  }
  return { _tag: "Defect", message: String(error) }
}

/** A failure's message as one line, for a person. */
export const errorLine = (error: unknown, context: { readonly url?: string } = {}): string => {
  const json = errorJson(error, context)
  return `skein: ${String(json["message"] ?? json["_tag"]).replace(/\s*\n\s*/g, " ")}`
}

/**
 * Reports a failure on stderr and turns it into a `CliExit`: the typed error as JSON
 * with `json` (and for `call`), else one line a person reads (what failed, why, what to do).
 */
export const reportFailures =
  (context: { readonly url?: string; readonly json?: boolean } = { json: true }) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, CliExit, R> =>
    effect.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
        if (error instanceof CliExit) return Effect.fail(error)
        const text = context.json === false ? errorLine(error, context) : JSON.stringify(errorJson(error, context))
        return Console.error(text).pipe(Effect.zipRight(Effect.fail(new CliExit({ code: 1 }))))
      })
    )

// ---- the options the commands share (declared in Cli.ts) --------------------------

export interface Connection {
  readonly url: string
  readonly token: Option.Option<string>
}
interface Json {
  readonly json: boolean
}
interface OnThread extends Connection, Json {
  readonly thread: string
}

const withClient = <A, E>(
  options: Connection & Partial<Json>,
  use: (client: SkeinClientShape) => Effect.Effect<A, E, Scope.Scope>
) =>
  Effect.scoped(
    Effect.flatMap(makeSkeinClient({ url: options.url, token: Option.getOrUndefined(options.token) }), use)
  ).pipe(reportFailures({ url: options.url, json: options.json ?? true }))

const printJson = (value: unknown) => Console.log(JSON.stringify(value))
const printLines = (lines: ReadonlyArray<string>) => Console.log(lines.join("\n"))

/**
 * A payload checked against its method's schema before anything is sent, so bad input
 * is one `InvalidInput` naming the argument (`RUN: …`), never a schema dump.
 */
const checked = <A, I>(
  schema: Schema.Schema<A, I>,
  raw: unknown,
  names: Readonly<Record<string, string>> = {}
): Effect.Effect<A, InvalidInput> =>
  Schema.decodeUnknown(schema, { errors: "all" })(raw).pipe(
    Effect.mapError((error) => {
      const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
      const text = [
        ...new Set(
          issues.map((issue) => {
            const field = issue.path.map(String).join(".")
            const name = names[field] ?? (field === "" ? "input" : field)
            return `${name}: ${issue.message.replace(/\s*\n\s*/g, " ")}`
          })
        )
      ]
      return new InvalidInput({ detail: text.join("; ") })
    })
  )

// ---- call -------------------------------------------------------------------------

const parseJsonArg = (raw: Option.Option<string>): Effect.Effect<unknown, InvalidInput> =>
  Option.match(raw, {
    onNone: () => Effect.succeed({}),
    onSome: (text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new InvalidInput({ detail: `the JSON argument does not parse (${(e as Error).message})` })
      })
  })

export const call = (
  o: Connection & {
    readonly limit: Option.Option<number>
    readonly method: string
    readonly payload: Option.Option<string>
  }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const rpc = SkeinRpcs.requests.get(o.method)
      if (rpc === undefined) {
        return yield* new InvalidInput({
          detail: `unknown method "${o.method}"; methods are ${Array.from(SkeinRpcs.requests.keys()).join(", ")}`
        })
      }
      const raw = yield* parseJsonArg(o.payload)
      const payload = yield* Schema.decodeUnknown(rpc.payloadSchema as Schema.Schema<unknown, unknown>)(raw).pipe(
        Effect.mapError((e) => new InvalidInput({ detail: `${o.method}: ${e.message}` }))
      )
      const [prefix, name] = o.method.split(".") as [string, string]
      // The typed client is indexed by method name; `call` takes the name at run time.
      const method = (client as unknown as Record<string, Record<string, (p: unknown) => unknown>>)[prefix]![name]!
      const stream = RpcSchema.getStreamSchemas(rpc.successSchema.ast)
      if (Option.isSome(stream)) {
        const encode = Schema.encode(stream.value.success as Schema.Schema<unknown, unknown>)
        const items = method(payload) as Stream.Stream<unknown, unknown>
        const bounded = Option.match(o.limit, { onNone: () => items, onSome: (n) => Stream.take(items, n) })
        return yield* Stream.runForEach(bounded, (item) => Effect.flatMap(encode(item), printJson))
      }
      const result = yield* method(payload) as Effect.Effect<unknown, unknown>
      const encoded = yield* Schema.encode(rpc.successSchema as Schema.Schema<unknown, unknown>)(result)
      yield* printJson(encoded)
    })
  )

// ---- human commands ---------------------------------------------------------------

const decodeThreadId = (raw: string, name = "THREAD") => checked(ThreadId, raw, { "": name })

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

const StartRunPayload = Schema.Struct(StartRunFields)

export const send = (
  o: OnThread & {
    readonly provider: string
    readonly message: string
    readonly model: Option.Option<string>
    readonly cleanContext: boolean
    readonly budget: Option.Option<number>
  }
) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const payload = yield* checked(
        StartRunPayload,
        {
          threadId: o.thread,
          provider: o.provider,
          message: o.message,
          ...(Option.isSome(o.model) ? { model: o.model.value } : {}),
          ...(o.cleanContext ? { cleanContext: true } : {}),
          ...(Option.isSome(o.budget) ? { handoffBudgetTokens: o.budget.value } : {})
        },
        {
          threadId: "THREAD",
          provider: "PROVIDER",
          message: "MESSAGE",
          model: "--model",
          handoffBudgetTokens: "--budget (1024 to 64000 tokens)"
        }
      )
      if (o.json) {
        const run = yield* client.run.start({ ...payload, wait: true })
        yield* printJson(Schema.encodeSync(RunView)(run))
        if (run.status !== "completed") return yield* new CliExit({ code: 1 })
        return
      }
      const run = yield* streamRun(client, payload)
      if (run.status !== "completed") {
        yield* Console.error(
          `skein: run ${run.ordinal} ${run.status}${run.failure === null ? "" : `: ${oneLine(run.failure.message, 400)}`}`
        )
        return yield* new CliExit({ code: 1 })
      }
    })
  )

/**
 * Starts the run and prints what it does as it happens (its events, replayed from the
 * thread's start and filtered to this run), then the summary; a progress line runs
 * meanwhile on a terminal. Returns the run as it ended.
 */
const streamRun = (client: SkeinClientShape, payload: typeof StartRunPayload.Type) =>
  Effect.gen(function* () {
    const style = colourFor(process.stdout)
    const progress = yield* Effect.acquireRelease(
      Effect.sync(() => makeProgress(process.stdout, process.stdout.isTTY === true, style)),
      (p) => Effect.sync(() => p.stop())
    )
    const started = yield* client.run.start({ ...payload, wait: false })
    const where = `run ${started.ordinal} on ${started.provider}`
    progress.label(`${where}: ${started.status === "queued" ? "queued behind the run in flight" : "working"}`)
    let ended: Run | undefined
    let saidContext = false
    const onEvent = (stored: StoredEvent) => {
      const e = stored.event
      switch (e._tag) {
        case "RunStarted":
        case "RunUpdated":
        case "RunEnded": {
          if (e.run.id !== started.id) return
          if (!saidContext && e.run.contextResolution !== null) {
            saidContext = true
            const via = e.run.contextHandoffId === null ? "" : ` via handoff ${e.run.contextHandoffId}`
            progress.print(paint(style, "dim", `${where} (${started.id}): context ${e.run.contextResolution}${via}`))
          }
          if (e.run.status === "running") progress.label(`${where}: working`)
          if (e._tag === "RunEnded") ended = e.run
          return
        }
        case "TurnItemRecorded": {
          const item = e.item
          if (item.runId !== started.id || item.type === "user_message") return
          if (item.type === "reasoning") return progress.label(`${where}: thinking`)
          if (item.type === "assistant_message") return progress.print(item.text)
          progress.print(itemLine(item, style))
          const hint = itemHint(item)
          if (hint !== undefined) progress.print(paint(style, "dim", hint))
          return
        }
        default:
          return
      }
    }
    yield* Stream.runForEach(
      client.thread
        .events({ threadId: payload.threadId })
        .pipe(Stream.takeUntil((s) => s.event._tag === "RunEnded" && s.event.run.id === started.id)),
      (stored) => Effect.sync(() => onEvent(stored))
    ).pipe(
      Effect.onInterrupt(() =>
        Effect.sync(() =>
          process.stderr.write(
            `skein: stopped watching; the run goes on (skein interrupt ${payload.threadId} stops it)\n`
          )
        )
      )
    )
    const run = ended ?? started
    progress.stop()
    progress.print(runSummary(run, style))
    return run
  })

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

export const interrupt = (o: OnThread) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const run = yield* client.run.interrupt({ threadId: yield* decodeThreadId(o.thread) })
      yield* o.json
        ? printJson(Schema.encodeSync(Run)(run))
        : Console.log(`run ${run.ordinal} (${run.id}) on ${run.provider}: ${run.status}`)
    })
  )

const decisions = ["accept", "decline", "cancel"] as const

/** The thread's open approvals, newest last. */
const openApprovals = (view: ThreadView): Array<TurnItem> =>
  view.runs.flatMap((run) => run.items.filter((i) => i.type === "approval_request" && i.status === "open"))

export const approve = (o: OnThread & { readonly words: ReadonlyArray<string> }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const threadId = yield* decodeThreadId(o.thread)
      const decision = o.words[o.words.length - 1] ?? ""
      if (!(decisions as ReadonlyArray<string>).includes(decision)) {
        return yield* new InvalidInput({
          detail: `DECISION: "${decision}" is not a decision; give accept, decline or cancel`
        })
      }
      let approvalId = o.words.length === 2 ? o.words[0]! : undefined
      if (approvalId === undefined) {
        const open = openApprovals(yield* client.thread.get({ threadId }))
        if (open.length !== 1) {
          return yield* new InvalidInput({
            detail:
              open.length === 0
                ? `thread ${threadId} has no open approval`
                : `thread ${threadId} has ${open.length} open approvals (${open.map((i) => (i.type === "approval_request" ? i.approvalId : "")).join(", ")}): name one, skein approve ${threadId} APPROVAL ${decision}`
          })
        }
        approvalId = (open[0] as Extract<TurnItem, { readonly type: "approval_request" }>).approvalId
      }
      const payload = yield* checked(
        Schema.Struct(RespondApprovalFields),
        { threadId, approvalId, decision },
        { approvalId: "APPROVAL" }
      )
      const item = yield* client.approval.respond(payload)
      yield* o.json ? printJson(Schema.encodeSync(TurnItem)(item)) : Console.log(itemLine(item))
    })
  )

export const subagent = (o: OnThread & { readonly provider: string; readonly prompt: string }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const payload = yield* checked(
        Schema.Struct(SpawnSubagentFields),
        { parentThreadId: o.thread, provider: o.provider, prompt: o.prompt },
        { parentThreadId: "THREAD", provider: "PROVIDER", prompt: "PROMPT" }
      )
      const spawned = yield* client.subagent.spawn(payload)
      yield* o.json
        ? printJson({ thread: Schema.encodeSync(AppThread)(spawned.thread), run: Schema.encodeSync(Run)(spawned.run) })
        : Console.log(spawned.thread.id)
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

// ---- lineage ----------------------------------------------------------------------

/** A run named by its ordinal (`3`) or its id (`run_…`). */
const runRef = (raw: string): Effect.Effect<{ readonly ordinal: number } | { readonly runId: RunId }, InvalidInput> =>
  /^\d+$/.test(raw)
    ? Effect.succeed({ ordinal: Number(raw) })
    : raw.startsWith("run_")
      ? Effect.map(checked(RunId, raw, { "": "RUN" }), (runId) => ({ runId }))
      : Effect.fail(
          new InvalidInput({
            detail: `RUN: ${JSON.stringify(raw)} is neither a run ordinal (0, 1, 2 … as skein show prints them) nor a run id (run_…)`
          })
        )

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
