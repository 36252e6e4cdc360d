/**
 * The pipes' view of a turn (pipeTimes.ts): a child spawned while observing has the write
 * that starts its turn and the end of the line that ends it stamped, also when that
 * line's mark and its newline come in other chunks than the one it begins in; a turn
 * seen only in part gives nothing; a child spawned after `stop` is not watched.
 */
import { describe, expect, it } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import { observePipes, type PipeTurn } from "./pipeTimes.js"

/** A child that, for each line read, writes `pieces` to stdout some milliseconds apart. */
const echoing = (pieces: ReadonlyArray<string>) =>
  ChildProcess.spawn(
    process.execPath,
    [
      "-e",
      `const pieces = ${JSON.stringify(pieces)};
       process.stdin.once("data", async () => {
         for (const piece of pieces) {
           process.stdout.write(piece);
           await new Promise((resolve) => setTimeout(resolve, 30));
         }
         process.exit(0);
       });`
    ],
    { stdio: ["pipe", "pipe", "inherit"] }
  )

const turnOf = async (
  pieces: ReadonlyArray<string>,
  line = '{"type":"user"}\n'
): Promise<{ turn: PipeTurn | undefined; pid: number | undefined; gotEnd: number }> => {
  const pipes = observePipes({ starts: (text) => text.startsWith('{"type":"user"'), endMark: '"type":"result"' })
  try {
    const child = echoing(pieces)
    let gotEnd = Number.NaN
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('"type":"result"') && out.endsWith("\n") && Number.isNaN(gotEnd)) gotEnd = performance.now()
    })
    const closed = new Promise((resolve) => child.once("close", resolve))
    child.stdin!.write(line)
    await closed
    return { turn: pipes.take(), pid: child.pid, gotEnd }
  } finally {
    pipes.stop()
  }
}

describe("a turn at the pipes", () => {
  it("stamps the write that starts it and the end of its last line", async () => {
    const { gotEnd, pid, turn } = await turnOf(['{"type":"assistant"}\n', '{"session":1,"type":"result"}\n'])
    expect(turn?.pid).toBe(pid)
    expect(turn!.ended).toBeGreaterThan(turn!.written)
    expect(turn!.ended).toBeLessThanOrEqual(gotEnd)
  })

  it("finds a mark split between chunks, and waits for the line's newline", async () => {
    const { gotEnd, turn } = await turnOf(['{"x":1}\n{"session":1,"ty', 'pe":"result","rest":', '"long"}\n'])
    expect(turn).toBeDefined()
    // Stamped on the chunk that brought the newline: the last one, some 60 ms after the first.
    expect(gotEnd - turn!.ended).toBeLessThan(5)
    expect(turn!.ended - turn!.written).toBeGreaterThan(50)
  })

  it("gives nothing for a turn whose end never came, or that no write started", async () => {
    expect((await turnOf(['{"type":"assistant"}\n'])).turn).toBeUndefined()
    expect((await turnOf(['{"type":"result"}\n'], '{"type":"control_request"}\n')).turn).toBeUndefined()
  })

  it("leaves children spawned after it stopped alone", async () => {
    const pipes = observePipes({ starts: () => true, endMark: "result" })
    pipes.stop()
    const child = echoing(['{"type":"result"}\n'])
    const closed = new Promise((resolve) => child.once("close", resolve))
    child.stdout!.resume()
    child.stdin!.write("go\n")
    await closed
    expect(pipes.take()).toBeUndefined()
  })
})
