/**
 * How frames leave one connection of the guarded protocol, in the order they are sent.
 *
 * Answers and event fan-out are sent from synchronous callbacks (a fiber's end, a
 * commit's listener). A transport that can write synchronously (`writeNow`) gets them
 * at once; any other gets every frame through one queue and one writer fiber, so its
 * frames still leave in the order they were sent. Closing the scope writes what was
 * queued, then stops the writer.
 */
import { Effect, Fiber, Mailbox, Stream } from "effect"
import type { Scope } from "effect"

/** A frame sent to clients: its text, and its UTF-8 bytes encoded on first use. */
export class FanOutFrame {
  #bytes: Uint8Array | undefined
  constructor(readonly text: string) {}
  get bytes(): Uint8Array {
    return (this.#bytes ??= Buffer.from(this.text, "utf8"))
  }
}

export interface ConnectionOutput {
  /** Sends an answer or a fan-out frame, synchronously (the frame's bytes must not be modified). */
  readonly send: (frame: FanOutFrame) => void
  /** Sends a reply given by the protocol itself (a refusal, a Pong, an interruption's answer). */
  readonly reply: (text: string) => Effect.Effect<void>
}

export interface OutputOptions {
  readonly write: (frame: string) => Effect.Effect<void>
  readonly writeNow?: ((frame: FanOutFrame) => void) | undefined
}

export const makeConnectionOutput = (options: OutputOptions): Effect.Effect<ConnectionOutput, never, Scope.Scope> => {
  const { write, writeNow } = options
  if (writeNow !== undefined) return Effect.succeed({ send: writeNow, reply: write })
  return Effect.gen(function* () {
    const queue = yield* Mailbox.make<string>()
    const writer = yield* Mailbox.toStream(queue).pipe(Stream.runForEach(write), Effect.forkScoped)
    yield* Effect.addFinalizer(() => Effect.zipRight(queue.end, Fiber.await(writer)))
    return {
      send: (frame) => void queue.unsafeOffer(frame.text),
      reply: (text) => Effect.sync(() => void queue.unsafeOffer(text))
    }
  })
}
