/**
 * Lines of a byte stream with a bound on their length: a line longer than the bound
 * is not held in memory, only its first bytes (enough to find its request id) and
 * its length, so that a peer that never sends a newline cannot grow the buffer
 * without limit. Used on what clients send the server (stdio) and on what provider
 * processes write (LineProcess).
 *
 * Each byte is looked at once: a line that spans many chunks is kept as the list of
 * its chunks and joined when its newline comes. (Appending each chunk to a string and
 * searching the whole string again, as this module's callers once did, takes time
 * quadratic in the line's length: 1.6 s of a blocked event loop for one 8 MB line
 * arriving in 64 KiB chunks, 25 s for 32 MB.)
 */
import { Stream } from "effect"

export type BoundedLine =
  | { readonly _tag: "Line"; readonly text: string }
  | {
      readonly _tag: "Oversized"
      /** The whole line's length in bytes. */
      readonly bytes: number
      /** Its first bytes, decoded. */
      readonly prefix: string
    }

/** How much of an oversized line is kept. */
export const OVERSIZED_PREFIX_BYTES = 4096

const NEWLINE = 0x0a
const CR = 0x0d

/** A push-style splitter: feed chunks, get the complete lines they end. */
export class LineSplitter {
  readonly #maxBytes: number
  readonly #decoder = new TextDecoder()
  #parts: Array<Uint8Array> = []
  #length = 0
  #oversized = false

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes
  }

  #append(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    if (!this.#oversized && this.#length + bytes.length > this.#maxBytes) {
      // Keep only the prefix from now on.
      this.#oversized = true
      const kept = Buffer.concat(this.#parts).subarray(0, OVERSIZED_PREFIX_BYTES)
      this.#parts = [kept]
    }
    if (this.#oversized) {
      const room = OVERSIZED_PREFIX_BYTES - this.#parts.reduce((n, p) => n + p.length, 0)
      if (room > 0) this.#parts.push(bytes.slice(0, room))
    } else {
      this.#parts.push(bytes.slice())
    }
    this.#length += bytes.length
  }

  /** A whole line's bytes (without its newline) as a line, or undefined when it is blank. */
  #line(bytes: Uint8Array): BoundedLine | undefined {
    const end = bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.length - 1 : bytes.length
    const text = this.#decoder.decode(bytes.subarray(0, end))
    return text.trim().length === 0 ? undefined : { _tag: "Line", text }
  }

  #take(): BoundedLine | undefined {
    const bytes = this.#length
    const joined = Buffer.concat(this.#parts)
    const oversized = this.#oversized
    this.#parts = []
    this.#length = 0
    this.#oversized = false
    if (oversized) return { _tag: "Oversized", bytes, prefix: this.#decoder.decode(joined) }
    return this.#line(joined)
  }

  /** The lines that `chunk` completes. */
  push(chunk: Uint8Array): Array<BoundedLine> {
    const lines: Array<BoundedLine> = []
    let start = 0
    let newline = chunk.indexOf(NEWLINE, start)
    while (newline !== -1) {
      // Most lines begin and end in one chunk: read in place, with nothing copied.
      const line =
        this.#length === 0 && newline - start <= this.#maxBytes
          ? this.#line(chunk.subarray(start, newline))
          : (this.#append(chunk.subarray(start, newline)), this.#take())
      if (line !== undefined) lines.push(line)
      start = newline + 1
      newline = chunk.indexOf(NEWLINE, start)
    }
    this.#append(chunk.subarray(start))
    return lines
  }

  /** The last line, if the input ended without a newline. */
  end(): Array<BoundedLine> {
    const line = this.#take()
    return line === undefined ? [] : [line]
  }
}

/** The lines of `bytes`, none held longer than `maxBytes`. */
export const boundedLines =
  (maxBytes: number) =>
  <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<BoundedLine, E, R> =>
    Stream.suspend(() => {
      const splitter = new LineSplitter(maxBytes)
      return bytes.pipe(
        Stream.mapConcat((chunk) => splitter.push(chunk)),
        Stream.concat(Stream.suspend(() => Stream.fromIterable(splitter.end())))
      )
    })
