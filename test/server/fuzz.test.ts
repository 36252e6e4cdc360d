/**
 * Seeded fuzzing of both transports: 13,000 hostile frames each (over 10,000 of them
 * malformed, the rest mutations that stayed valid) to a real
 * `skein daemon` (WebSocket) and a real `skein stdio` child, with valid requests
 * interleaved. Asserts that the process lives and the connection stays open, that
 * every frame gets exactly what the protocol promises (see `expectedAnswer`: every
 * request-shaped frame an Exit for its id, typed as a Skein error when it fails),
 * that the interleaved valid requests succeed, and that the heap after a full GC
 * returns to its baseline.
 */
import { Schema } from "effect"
import { SkeinError } from "@skein/domain"
import { describe, expect, it } from "vitest"
import { type Expected, expectedAnswer, fuzzFrame, seeded } from "./fuzzFrames.js"
import { spawnLineChild } from "./lineChild.js"
import { memoryProbeArgs, mib, sampleMemory } from "./memoryProbe.js"
import { openRawSession } from "./rawSession.js"
import { binPath, childEnv, requestFrame, tempDir, tokenIn, trackDaemons } from "./support.js"

const start = trackDaemons()

/** Enough that over 10,000 are refused as malformed (some mutations leave a request valid). */
const FRAMES = 13_000
/** At least this many frames of the main run must be refused (InvalidInput or a protocol defect). */
const MIN_REFUSED = 10_000
const WARM_UP_FRAMES = 500
const BATCH = 100
/** One valid request after every this many frames. */
const VALID_EVERY = 20
/** How much the retained heap (+ external buffers) may grow over the whole run. */
const MAX_RETAINED_GROWTH = 8 * 1024 * 1024

const isSkeinError = Schema.is(Schema.encodedSchema(SkeinError))

interface Transport {
  readonly name: "websocket" | "stdio"
  readonly send: (text: string) => Promise<void>
  readonly replies: ReadonlyArray<any>
  readonly until: (condition: () => boolean, timeoutMs: number, what: string) => Promise<void>
  /** Why the transport is unusable (closed, process gone), if it is. */
  readonly broken: () => string | undefined
}

/** A valid request and the check of its answer. */
interface ValidCall {
  readonly frame: string
  readonly check: (exit: any) => void
}

interface Tally {
  frames: number
  expectedExits: Map<string, string>
  expectedDefects: number
  expectedPongs: number
  expectedNone: number
  valid: Map<string, ValidCall>
  exits: Map<string, Array<any>>
  defects: number
  pongs: number
  other: Array<any>
  read: number
}

const newTally = (): Tally => ({
  frames: 0,
  expectedExits: new Map(),
  expectedDefects: 0,
  expectedPongs: 0,
  expectedNone: 0,
  valid: new Map(),
  exits: new Map(),
  defects: 0,
  pongs: 0,
  other: [],
  read: 0
})

/** Files the replies that arrived since the last call. */
const absorb = (tally: Tally, replies: ReadonlyArray<any>) => {
  for (; tally.read < replies.length; tally.read++) {
    const reply = replies[tally.read]
    if (reply._tag === "Exit") {
      const list = tally.exits.get(reply.requestId) ?? []
      list.push(reply)
      tally.exits.set(reply.requestId, list)
    } else if (reply._tag === "Defect") tally.defects++
    else if (reply._tag === "Pong") tally.pongs++
    else tally.other.push(reply)
  }
}

/**
 * Sends `count` frames of the stream seeded `seed` in batches, with valid calls
 * interleaved, and waits after each batch for every answer it is owed.
 */
const drive = async (
  transport: Transport,
  tally: Tally,
  seed: number,
  count: number,
  nextId: () => string,
  validCall: (id: string) => ValidCall
) => {
  const random = seeded(seed)
  for (let sent = 0; sent < count;) {
    const batchEnd = Math.min(count, sent + BATCH)
    for (; sent < batchEnd; sent++) {
      const frame = fuzzFrame(random, nextId, { big: true })
      const expected: Expected = expectedAnswer(frame.text, transport.name)
      if (expected.kind === "exit") tally.expectedExits.set(expected.id, frame.label)
      else if (expected.kind === "defect") tally.expectedDefects++
      else if (expected.kind === "pong") tally.expectedPongs++
      else tally.expectedNone++
      tally.frames++
      await transport.send(frame.text)
      if (sent % VALID_EVERY === VALID_EVERY - 1) {
        const id = nextId()
        const call = validCall(id)
        tally.valid.set(id, call)
        tally.expectedExits.set(id, "valid")
        await transport.send(call.frame)
      }
    }
    await transport
      .until(
        () => {
          absorb(tally, transport.replies)
          if (tally.defects < tally.expectedDefects || tally.pongs < tally.expectedPongs) return false
          for (const id of tally.expectedExits.keys()) if (!tally.exits.has(id)) return false
          return true
        },
        30_000,
        `the answers to frames ${batchEnd - BATCH}-${batchEnd} over ${transport.name}`
      )
      .catch((error) => {
        const missing = [...tally.expectedExits].filter(([id]) => !tally.exits.has(id)).slice(0, 5)
        throw new Error(
          `${error.message}; ${transport.broken() ?? "transport open"}; defects ${tally.defects}/${tally.expectedDefects}, pongs ${tally.pongs}/${tally.expectedPongs}, missing exits: ${JSON.stringify(missing)}`
        )
      })
  }
}

/**
 * Every expectation met exactly, every failure typed, every valid call right.
 * Returns how many frames were refused as malformed (a defect, or InvalidInput).
 */
const checkTally = (tally: Tally): number => {
  let refused = tally.defects
  absorb(tally, [])
  expect(tally.other).toEqual([])
  expect(tally.defects).toBe(tally.expectedDefects)
  expect(tally.pongs).toBe(tally.expectedPongs)
  const unexpected = [...tally.exits.keys()].filter((id) => !tally.expectedExits.has(id))
  expect(unexpected).toEqual([])
  for (const [id, label] of tally.expectedExits) {
    const exits = tally.exits.get(id)!
    expect(exits.length, `answers for request ${id} (${label})`).toBe(1)
    const exit = exits[0].exit
    const valid = tally.valid.get(id)
    if (valid !== undefined) {
      valid.check(exit)
      continue
    }
    if (exit._tag === "Failure") {
      // a Skein error, never a defect or an interruption
      expect(exit.cause._tag, `request ${id} (${label}): ${JSON.stringify(exit).slice(0, 300)}`).toBe("Fail")
      expect(
        isSkeinError(exit.cause.error),
        `request ${id} (${label}) failed with ${JSON.stringify(exit.cause.error).slice(0, 300)}`
      ).toBe(true)
      if (exit.cause.error._tag === "InvalidInput") refused++
    } else {
      expect(exit._tag).toBe("Success")
    }
  }
  return refused
}

/** Valid calls in turn: create a thread, read it back, list threads, list providers. */
const validCalls = () => {
  let threadId: string | undefined
  let turn = 0
  return (id: string): ValidCall => {
    const kind = threadId === undefined ? 0 : turn++ % 4
    if (kind === 0) {
      const title = `fuzz ${id}`
      return {
        frame: requestFrame(id, "thread.create", { title }),
        check: (exit) => {
          expect(exit).toMatchObject({ _tag: "Success", value: { title } })
          threadId ??= exit.value.id
        }
      }
    }
    if (kind === 1) {
      const expected = threadId!
      return {
        frame: requestFrame(id, "thread.get", { threadId: expected }),
        check: (exit) => expect(exit).toMatchObject({ _tag: "Success", value: { thread: { id: expected } } })
      }
    }
    if (kind === 2) {
      return {
        frame: requestFrame(id, "thread.list", {}),
        check: (exit) => {
          expect(exit._tag).toBe("Success")
          expect(exit.value.length).toBeGreaterThan(0)
        }
      }
    }
    return {
      frame: requestFrame(id, "provider.list", {}),
      check: (exit) => {
        expect(exit._tag).toBe("Success")
        expect(exit.value.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(["alpha", "beta"]))
      }
    }
  }
}

/**
 * Warm-up (so that caches filled on first use count in the baseline), baseline,
 * the main run, then the heap again once the run's connection is gone.
 */
const fuzz = async (
  transport: () => Promise<Transport & { readonly close: () => void }>,
  pid: number,
  stderr: () => string,
  alive: () => boolean
) => {
  let id = 0
  const nextId = () => String(++id)
  const valid = validCalls()
  const warmUp = await transport()
  const warmTally = newTally()
  await drive(warmUp, warmTally, 1, WARM_UP_FRAMES, nextId, valid)
  checkTally(warmTally)
  const baseline = await sampleMemory(pid, stderr)

  const main = await transport()
  const tally = newTally()
  const started = Date.now()
  await drive(main, tally, 20_251_130, FRAMES, nextId, valid)
  const seconds = (Date.now() - started) / 1000
  const refused = checkTally(tally)
  expect(tally.frames).toBeGreaterThanOrEqual(FRAMES)
  expect(refused).toBeGreaterThanOrEqual(MIN_REFUSED)
  expect(main.broken()).toBeUndefined()
  expect(alive()).toBe(true)
  main.close()
  warmUp.close()
  // Let the server notice the closed connections before measuring.
  await new Promise((r) => setTimeout(r, 500))
  const after = await sampleMemory(pid, stderr)
  const growth = after.heapUsed + after.external - (baseline.heapUsed + baseline.external)
  console.log(
    `fuzz ${main.name}: ${tally.frames} hostile frames (${refused} refused as malformed) + ${tally.valid.size} valid requests in ${seconds.toFixed(1)} s; ` +
      `answers: ${tally.expectedExits.size} exits, ${tally.defects} defects, ${tally.pongs} pongs, ${tally.expectedNone} unanswered by design; ` +
      `heap after GC ${mib(baseline.heapUsed)} -> ${mib(after.heapUsed)}, external ${mib(baseline.external)} -> ${mib(after.external)}, ` +
      `rss ${mib(baseline.rss)} -> ${mib(after.rss)}`
  )
  expect(growth).toBeLessThan(MAX_RETAINED_GROWTH)
  expect(alive()).toBe(true)
}

describe("fuzz", () => {
  it("WebSocket: 13,000 seeded hostile frames (over 10,000 malformed) to a daemon, each answered as promised; valid ones served; memory back", async () => {
    const home = tempDir("skein-fuzz-ws-")
    const daemon = await start(["--port", "0"], childEnv(home), memoryProbeArgs(home))
    const url = `${daemon.url}?token=${tokenIn(home)}`
    const alive = () => daemon.child.exitCode === null && daemon.child.signalCode === null
    await fuzz(
      async () => {
        const session = await openRawSession(url)
        return {
          name: "websocket",
          send: session.send,
          replies: session.replies,
          until: session.until,
          broken: () => {
            const closed = session.closed()
            return closed === undefined
              ? alive()
                ? undefined
                : "the daemon exited"
              : `closed ${closed.code} ${closed.reason}`
          },
          close: session.close
        }
      },
      daemon.child.pid!,
      daemon.stderr,
      alive
    )
    // a fresh typed-protocol exchange still works
    const after = await openRawSession(url)
    await after.send(requestFrame("1", "thread.list", {}))
    await after.until(() => after.replies.length > 0, 10_000, "an answer after the fuzzing")
    expect(after.replies[0].exit._tag).toBe("Success")
    after.close()
  }, 120_000)

  it("stdio: 13,000 seeded hostile lines (over 10,000 malformed) to `skein stdio`, each answered as promised; valid ones served; memory back", async () => {
    const home = tempDir("skein-fuzz-stdio-")
    const child = spawnLineChild(process.execPath, [...memoryProbeArgs(home), binPath, "stdio"], childEnv(home))
    try {
      let used = false
      await fuzz(
        async () => {
          // One stdin for the whole process: the warm-up and main runs share it, each
          // reading the replies that arrive after it starts.
          const offset = used ? child.replies.length : 0
          used = true
          const replies = new Proxy([] as Array<any>, {
            get: (_, key) =>
              key === "length"
                ? child.replies.length - offset
                : typeof key === "string" && /^\d+$/.test(key)
                  ? child.replies[Number(key) + offset]
                  : undefined
          })
          return {
            name: "stdio",
            send: async (text) => {
              // one line per frame (the generator escapes every newline)
              if (/[\r\n]/.test(text)) throw new Error(`a frame with a newline: ${text.slice(0, 100)}`)
              child.write(text)
              if (!child.child.stdin.writableNeedDrain) return
              await new Promise<void>((resolve) => child.child.stdin.once("drain", () => resolve()))
            },
            replies,
            until: child.until,
            broken: () => (child.alive() ? undefined : `the child exited; stderr: ${child.stderr().slice(-2000)}`),
            close: () => {}
          }
        },
        child.child.pid!,
        child.stderr,
        child.alive
      )
    } finally {
      await child.kill()
    }
  }, 120_000)
})
