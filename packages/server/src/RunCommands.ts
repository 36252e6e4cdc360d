/**
 * The commands that drive runs: `send` (a run shown as it happens), `interrupt`,
 * `approve` and `subagent`.
 */
import {
  AppThread,
  InterruptRunFields,
  InvalidInput,
  RespondApprovalFields,
  Run,
  RunView,
  SpawnSubagentFields,
  StartRunFields,
  type StoredEvent,
  ThreadView,
  TurnItem,
  type WhenBusy
} from "@skein/domain"
import { Console, Effect, Option, Schema, Stream } from "effect"
import { checked, decodeThreadId, type OnThread, printJson, withClient } from "./CliClient.js"
import { CliExit } from "./CliExit.js"
import { colourFor, makeProgress, oneLine, paint } from "./CliStyle.js"
import type { SkeinClientShape } from "./Client.js"
import { itemHint, itemLine, runSummary } from "./Presentation.js"

const StartRunPayload = Schema.Struct(StartRunFields)
const InterruptRunPayload = Schema.Struct(InterruptRunFields)

export const send = (
  o: OnThread & {
    readonly provider: string
    readonly message: string
    readonly model: Option.Option<string>
    readonly cleanContext: boolean
    readonly budget: Option.Option<number>
    readonly whenBusy: Option.Option<WhenBusy>
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
          ...(Option.isSome(o.budget) ? { handoffBudgetTokens: o.budget.value } : {}),
          ...(Option.isSome(o.whenBusy) ? { whenBusy: o.whenBusy.value } : {})
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

export const interrupt = (o: OnThread & { readonly run: Option.Option<string> }) =>
  withClient(o, (client) =>
    Effect.gen(function* () {
      const payload = yield* checked(
        InterruptRunPayload,
        { threadId: o.thread, ...(Option.isSome(o.run) ? { runId: o.run.value } : {}) },
        { threadId: "THREAD", runId: "--run" }
      )
      const run = yield* client.run.interrupt(payload)
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
