/**
 * The inspector's thread page (`/inspect#token=…&thread=…`, which reads `thread.get`
 * with the newest 200 runs and follows `thread.events`) in a headless Chromium
 * (playwright-core, test/support/browser.ts), against a daemon this bench starts from
 * the bundle (`skein daemon --port 0`, its address from `skein inspect --url`), with
 * threads of runs on the scripted provider `alpha`:
 *
 * 1. First view: from `page.goto(address)` until the thread's heading and its run list
 *    are on screen (recorded inside the page: a MutationObserver, installed before the
 *    page's own script, sees the `<h2>` and the `[data-testid="run"]` items, then the
 *    frame that draws them is waited for), for a 5,000-run thread and a 10-run one, a
 *    fresh browser context (empty cache) per sample, SAMPLES of each in alternating
 *    rounds after one warm-up round; p50 and max each and the ratio. Goal for the
 *    5,000-run thread: under 1 s. Beside it, `thread.get` of the same window from Node.
 * 2. Live: with the 5,000-run thread's page open, RATE runs a second for STREAM_S s
 *    started from Node (`run.start` with `whenBusy: "queue"`, one every 1000/RATE ms on a
 *    fixed schedule, not waiting for the previous one), the rate achieved; inside the
 *    page, the gaps between animation frames (a requestAnimationFrame loop; p50, p99,
 *    max), the longest task (PerformanceObserver `longtask`), and how long after its
 *    `run.start` answered each run's ordinal entered the list (the `<li value>` of the
 *    last run, watched by a MutationObserver; p50, max). Baseline: the same frame figures
 *    over STREAM_S s with the page open and nothing streaming, measured just before.
 *
 * Times that cross processes (Node's answer, the page's DOM) are `Date.now()` on both
 * sides: the same wall clock of one machine, to the millisecond.
 */
import type { ProviderName, ThreadId } from "@skein/domain"
import { makeSkeinClient } from "@skein/server"
import { Duration, Effect, Exit, Scope } from "effect"
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Browser } from "playwright-core"
import { withChromium } from "../support/browser.js"
import { removeDir, tempDir } from "../support/runtime.js"
import { bin, startDaemon } from "./daemon.js"
import { percentile } from "./stats.js"

const BIG = 5000
const SMALL = 10
const SAMPLES = 6
const RATE = 20
const STREAM_S = 10
const GOAL_MS = 1000
const alpha = "alpha" as ProviderName

/** What the page-side functions use of the browser (this package compiles without the DOM's types). */
interface RunItem {
  readonly value: number
}
interface PageGlobals {
  readonly document: {
    readonly body: unknown
    readonly querySelector: (selector: string) => { readonly textContent: string | null } | null
    readonly querySelectorAll: (selector: string) => { readonly length: number; readonly [i: number]: RunItem }
  }
  readonly requestAnimationFrame: (f: (t: number) => void) => number
  readonly setTimeout: (f: () => void, ms: number) => number
  readonly performance: { readonly now: () => number }
  readonly MutationObserver: new (f: () => void) => {
    readonly observe: (target: unknown, options: { readonly childList: boolean; readonly subtree: boolean }) => void
    readonly disconnect: () => void
  }
  readonly PerformanceObserver: new (
    f: (list: { readonly getEntries: () => ReadonlyArray<{ startTime: number; duration: number }> }) => void
  ) => { readonly observe: (options: { readonly type: string }) => void }
  __shown?: { readonly at: number; readonly title: string | null; readonly runs: number }
  __bench?: {
    readonly start: () => void
    readonly stop: () => { readonly gaps: Array<number>; readonly tasks: Array<number> }
    readonly seen: () => Array<[number, number]>
    readonly max: () => number
  }
}

/** In the page, before its own script: when the heading and the run items are in, the time of the frame that drew them. */
const watchFirstView = () => {
  const g = globalThis as unknown as PageGlobals
  const observer = new g.MutationObserver(() => {
    const heading = g.document.querySelector("h2")
    const runs = g.document.querySelectorAll('[data-testid="run"]')
    if (heading === null || runs.length === 0) return
    observer.disconnect()
    // The frame's callbacks run before it is drawn; the task after it, once it is.
    g.requestAnimationFrame(() =>
      g.setTimeout(() => (g.__shown = { at: Date.now(), title: heading.textContent, runs: runs.length }), 0)
    )
  })
  observer.observe(g.document, { childList: true, subtree: true })
}

/**
 * In the open page: a requestAnimationFrame loop (frame gaps while recording), long
 * tasks, and the wall time each ordinal beyond the page's last one entered the run list.
 */
const installRecorder = () => {
  const g = globalThis as unknown as PageGlobals
  let recording = false
  let last = 0
  let from = 0
  let gaps: Array<number> = []
  let tasks: Array<[number, number]> = []
  const seen: Array<[number, number]> = []
  let max = 0
  const frame = (t: number) => {
    if (recording && last > 0) gaps.push(t - last)
    last = t
    g.requestAnimationFrame(frame)
  }
  g.requestAnimationFrame(frame)
  new g.PerformanceObserver((list) => {
    for (const entry of list.getEntries()) tasks.push([entry.startTime, entry.duration])
  }).observe({ type: "longtask" })
  const note = () => {
    const runs = g.document.querySelectorAll('[data-testid="run"]')
    const newest = runs.length === 0 ? 0 : Number(runs[runs.length - 1]!.value)
    if (max === 0) max = newest
    const now = Date.now()
    for (let ordinal = max + 1; ordinal <= newest; ordinal++) seen.push([ordinal, now])
    max = Math.max(max, newest)
  }
  note()
  new g.MutationObserver(note).observe(g.document.body, { childList: true, subtree: true })
  g.__bench = {
    start: () => {
      gaps = []
      tasks = []
      last = 0
      from = g.performance.now()
      recording = true
    },
    stop: () => {
      recording = false
      return { gaps, tasks: tasks.filter(([start]) => start >= from).map(([, duration]) => duration) }
    },
    seen: () => seen,
    max: () => max
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)))
const WIDTH = 42
const ms = (n: number) => `${n.toFixed(0).padStart(5)} ms`

/** One first view: a fresh context, `goto`, and the page's own record of when the thread was drawn. */
const firstView = async (browser: Browser, address: string, title: string, expectRuns: number): Promise<number> => {
  const context = await browser.newContext()
  try {
    await context.addInitScript(watchFirstView)
    const page = await context.newPage()
    const started = Date.now()
    await page.goto(address)
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).__shown !== undefined, undefined, {
      timeout: 30_000,
      polling: 50
    })
    const shown = await page.evaluate(() => (globalThis as unknown as PageGlobals).__shown!)
    if (shown.title !== title || shown.runs !== expectRuns)
      throw new Error(`the page showed ${shown.title} with ${shown.runs} runs, not ${title} with ${expectRuns}`)
    return shown.at - started
  } finally {
    await context.close()
  }
}

export const run = async (): Promise<void> => {
  const home = tempDir("skein-bench-inspector-")
  const scope = Effect.runSync(Scope.make())
  let daemon: Awaited<ReturnType<typeof startDaemon>> | undefined
  try {
    daemon = await startDaemon(home)
    const env = { PATH: process.env.PATH ?? "", HOME: home, SKEIN_HOME: home }
    const token = Fs.readFileSync(Path.join(home, "token"), "utf8").trim()
    const c = await Effect.runPromise(Scope.extend(makeSkeinClient({ url: daemon.url, token }), scope))
    /** A call's answer, or a failure after `seconds` (so that nothing here waits for ever). */
    const call = <A, E>(effect: Effect.Effect<A, E>, seconds = 30): Promise<A> =>
      Effect.runPromise(
        Effect.timeoutFail(effect, {
          duration: Duration.seconds(seconds),
          onTimeout: () => new Error(`no answer within ${seconds} s`)
        })
      )

    const inspect = spawnSync(process.execPath, [bin, "inspect", "--url", daemon.url], {
      env,
      encoding: "utf8",
      timeout: 20_000
    })
    const address = inspect.stdout.trim()
    if (inspect.status !== 0 || !/^http:\/\/127\.0\.0\.1:\d+\/inspect#token=/.test(address))
      throw new Error(`skein inspect printed ${JSON.stringify(address)} (${inspect.status}): ${inspect.stderr}`)
    const pageToken = new URLSearchParams(address.split("#")[1]).get("token") ?? ""
    const threadAddress = (threadId: ThreadId) =>
      `${address.split("#")[0]}#token=${encodeURIComponent(pageToken)}&thread=${encodeURIComponent(threadId)}`

    const made = Date.now()
    const fill = async (title: string, runs: number) => {
      const thread = await call(c.thread.create({ title }))
      await call(
        Effect.forEach(
          Array.from({ length: runs }, (_, i) => i + 1),
          (n) => c.run.start({ threadId: thread.id, provider: alpha, message: `run ${n}`, wait: true }),
          { discard: true }
        ),
        180
      )
      return thread.id
    }
    const small = await fill(`${SMALL} runs`, SMALL)
    const big = await fill(`${BIG} runs`, BIG)
    const madeS = (Date.now() - made) / 1000

    // thread.get of the page's window, from Node: what the daemon and the wire take of a first view.
    const readTimes = { big: [] as Array<number>, small: [] as Array<number> }
    let bigBytes = 0
    for (let i = 0; i < 8; i++) {
      for (const [key, threadId] of [
        ["big", big],
        ["small", small]
      ] as const) {
        const t0 = performance.now()
        const view = await call(c.thread.get({ threadId, runs: { limit: 200 }, items: false }))
        if (i > 0) readTimes[key].push(performance.now() - t0)
        if (key === "big") bigBytes = JSON.stringify(view).length
      }
    }

    await withChromium(async (browser) => {
      // 1. First view, alternating, one warm-up round.
      const views = { big: [] as Array<number>, small: [] as Array<number> }
      for (let round = 0; round <= SAMPLES; round++) {
        const order = round % 2 === 0 ? (["big", "small"] as const) : (["small", "big"] as const)
        for (const key of order) {
          const took = await (key === "big"
            ? firstView(browser, threadAddress(big), `${BIG} runs`, 200)
            : firstView(browser, threadAddress(small), `${SMALL} runs`, SMALL))
          if (round > 0) views[key].push(took)
        }
      }
      const bigP50 = percentile(views.big, 50)
      const smallP50 = percentile(views.small, 50)
      console.log(
        `inspector: first view of a thread's page, page.goto until heading and runs drawn, ${SAMPLES} samples each (fresh context, alternating, after a warm-up round); ${Os.cpus().length} CPUs`
      )
      console.log(
        `  ${`${BIG.toLocaleString("en")}-run thread (newest 200 shown)`.padEnd(WIDTH)} p50 ${ms(bigP50)}  max ${ms(Math.max(...views.big))}  goal < ${GOAL_MS} ms: ${bigP50 < GOAL_MS ? "met" : `MISSED by ${(bigP50 - GOAL_MS).toFixed(0)} ms`}`
      )
      console.log(
        `  ${`${SMALL}-run thread (baseline)`.padEnd(WIDTH)} p50 ${ms(smallP50)}  max ${ms(Math.max(...views.small))}`
      )
      console.log(`  ${"ratio of the p50s".padEnd(WIDTH)} ${(bigP50 / smallP50).toFixed(2)}x`)
      console.log(
        `  thread.get of that window from Node, p50: ${percentile(readTimes.big, 50).toFixed(1)} ms (${BIG.toLocaleString("en")} runs, ${(bigBytes / 1024).toFixed(0)} KiB as JSON) vs ${percentile(readTimes.small, 50).toFixed(1)} ms (${SMALL} runs); threads made in ${madeS.toFixed(0)} s`
      )

      // 2. Live: the big thread's page open, idle then streaming.
      const page = await browser.newPage()
      try {
        await page.goto(threadAddress(big))
        await page.getByRole("heading", { name: `${BIG} runs` }).waitFor({ timeout: 30_000 })
        await page.locator('[data-testid="run"]').last().waitFor({ timeout: 30_000 })
        await page.evaluate(installRecorder)
        await sleep(1000)
        const startRecording = () => page.evaluate(() => (globalThis as unknown as PageGlobals).__bench!.start())
        const stopRecording = () => page.evaluate(() => (globalThis as unknown as PageGlobals).__bench!.stop())

        await startRecording()
        await sleep(STREAM_S * 1000)
        const idle = await stopRecording()

        const firstOrdinal = (await page.evaluate(() => (globalThis as unknown as PageGlobals).__bench!.max())) + 1
        const answered: Array<{ readonly ordinal: number; readonly at: number; readonly took: number }> = []
        const count = RATE * STREAM_S
        await startRecording()
        const t0 = Date.now()
        const starts: Array<Promise<void>> = []
        for (let i = 0; i < count; i++) {
          await sleep(t0 + (i * 1000) / RATE - Date.now())
          const sent = Date.now()
          starts.push(
            call(c.run.start({ threadId: big, provider: alpha, message: `live ${i}`, whenBusy: "queue" })).then((r) => {
              const at = Date.now()
              answered.push({ ordinal: r.ordinal, at, took: at - sent })
            })
          )
        }
        await Promise.all(starts)
        const lastAnswered = Math.max(...answered.map((a) => a.at))
        const lastOrdinal = Math.max(...answered.map((a) => a.ordinal))
        await page
          .waitForFunction((n) => (globalThis as unknown as PageGlobals).__bench!.max() >= n, lastOrdinal, {
            timeout: 15_000,
            polling: 50
          })
          .catch(() => undefined)
        const live = await stopRecording()
        const seen = new Map(await page.evaluate(() => (globalThis as unknown as PageGlobals).__bench!.seen()))
        const lags = answered.flatMap((a) => (seen.has(a.ordinal) ? [seen.get(a.ordinal)! - a.at] : []))
        const missing = answered.filter((a) => !seen.has(a.ordinal)).length
        const achieved = (answered.length / (lastAnswered - t0)) * 1000
        const tookP50 = percentile(
          answered.map((a) => a.took),
          50
        )

        const frames = (label: string, r: { gaps: Array<number>; tasks: Array<number> }) =>
          console.log(
            `  ${label.padEnd(WIDTH)} frame gap p50 ${ms(percentile(r.gaps, 50))}  p99 ${ms(percentile(r.gaps, 99))}  max ${ms(Math.max(0, ...r.gaps))}  (${r.gaps.length} frames); long tasks ${r.tasks.length}, longest ${r.tasks.length === 0 ? "none" : `${r.tasks.reduce((a, b) => Math.max(a, b), 0).toFixed(0)} ms`}`
          )
        console.log(
          `inspector: the ${BIG.toLocaleString("en")}-run thread's page open while runs stream in (run.start with whenBusy queue, from Node), inside the page`
        )
        console.log(
          `  asked ${RATE}/s for ${STREAM_S} s: ${answered.length} runs (ordinals ${firstOrdinal}-${lastOrdinal}) answered in ${((lastAnswered - t0) / 1000).toFixed(1)} s, ${achieved.toFixed(1)}/s achieved; run.start answered in p50 ${tookP50.toFixed(0)} ms, max ${Math.max(...answered.map((a) => a.took)).toFixed(0)} ms`
        )
        frames(`idle, ${STREAM_S} s (baseline)`, idle)
        frames(`streaming, until the last run is shown`, live)
        console.log(
          `  ${"answered until its ordinal is in the list".padEnd(WIDTH)} p50 ${ms(percentile(lags, 50))}  max ${ms(Math.max(0, ...lags))}${missing > 0 ? `  (${missing} never shown)` : ""}`
        )
      } finally {
        await page.close()
      }
    })
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await daemon?.stop()
    removeDir(home)
  }
}
