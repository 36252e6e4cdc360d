/**
 * The thread actor's protocol has the shape of an @effect/cluster entity: the same
 * message definitions make an Entity, so thread actors can later run sharded without
 * the protocol being redesigned.
 */
import { Entity } from "@effect/cluster"
import { describe, expect, it } from "@effect/vitest"
import { ThreadProtocol, threadRpcs } from "@skein/runtime"

describe("ThreadProtocol", () => {
  it("makes an @effect/cluster Entity as it is", () => {
    const ThreadEntity = Entity.make("Thread", threadRpcs)
    expect([...ThreadEntity.protocol.requests.keys()].sort()).toEqual([...ThreadProtocol.requests.keys()].sort())
    expect(ThreadEntity.protocol.requests.size).toBe(threadRpcs.length)
  })
})
