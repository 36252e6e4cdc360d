import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import {
  ApprovalId,
  CheckpointId,
  CommandId,
  ContextHandoffId,
  ContextTransferId,
  makeId,
  ProviderSessionId,
  ProviderThreadId,
  RunId,
  ThreadId,
  TurnItemId
} from "../src/Ids.js"

describe("fresh ids", () => {
  // makeId builds ids without running their schema's check: each must pass it all the same.
  const kinds = [
    ["thread", ThreadId, "thr_"],
    ["run", RunId, "run_"],
    ["turnItem", TurnItemId, "itm_"],
    ["providerThread", ProviderThreadId, "pth_"],
    ["providerSession", ProviderSessionId, "pss_"],
    ["transfer", ContextTransferId, "xfr_"],
    ["handoff", ContextHandoffId, "hof_"],
    ["checkpoint", CheckpointId, "chk_"],
    ["command", CommandId, "cmd_"],
    ["approval", ApprovalId, "apr_"]
  ] as const

  it("are valid for their schema, carry their prefix and do not repeat", () => {
    for (const [kind, schema, prefix] of kinds) {
      const made = Array.from({ length: 500 }, () => makeId[kind]())
      for (const id of made) {
        expect(Schema.is(schema as unknown as Schema.Schema<string>)(id)).toBe(true)
        expect(id).toMatch(new RegExp(`^${prefix}[0-9a-f]{20}$`))
      }
      expect(new Set(made).size).toBe(made.length)
    }
  })

  it("are random in every digit, across many refills of the random pool", () => {
    // 2,000 ids draw 20,000 bytes: the pool (4 KB) is refilled several times.
    const digits = Array.from({ length: 20 }, () => new Set<string>())
    for (let n = 0; n < 2000; n++) {
      const id = makeId.run()
      for (let i = 0; i < 20; i++) digits[i]!.add(id[4 + i]!)
    }
    // Each position takes all 16 values (one missing in 2,000 draws: about 16 × (15/16)^2000).
    for (const seen of digits) expect(seen.size).toBe(16)
  })
})
