import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { boundedLines, LineSplitter, OVERSIZED_PREFIX_BYTES } from "../src/process/BoundedLines.js"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("bounded lines", () => {
  it("splits across chunks, drops blank lines and CRs, keeps a last line without newline", async () => {
    const chunks = ['{"a":', '1}\n\n  \r\n{"b"', ":2}\r\n", "é\n", "tail"].map(bytes)
    const lines = await Effect.runPromise(Stream.fromIterable(chunks).pipe(boundedLines(100), Stream.runCollect))
    expect(Chunk.toReadonlyArray(lines)).toEqual([
      { _tag: "Line", text: '{"a":1}' },
      { _tag: "Line", text: '{"b":2}' },
      { _tag: "Line", text: "é" },
      { _tag: "Line", text: "tail" }
    ])
  })

  it("keeps only the prefix of a line over the limit, and its length", () => {
    const splitter = new LineSplitter(1_000)
    const head = '{"_tag":"Request","id":"9",'
    const out = [...splitter.push(bytes(head)), ...splitter.push(new Uint8Array(5_000_000).fill(0x78))]
    expect(out).toEqual([])
    const [line, next] = splitter.push(bytes('"}\n{"ok":1}\n'))
    expect(line).toMatchObject({ _tag: "Oversized", bytes: head.length + 5_000_000 + 2 })
    expect((line as { prefix: string }).prefix.startsWith(head)).toBe(true)
    expect((line as { prefix: string }).prefix.length).toBe(OVERSIZED_PREFIX_BYTES)
    expect(next).toEqual({ _tag: "Line", text: '{"ok":1}' })
  })
})
