import { Schema } from "effect"
import { ProviderName, ProviderSessionId } from "./Ids.js"

export const ProviderSessionStatus = Schema.Literal("starting", "ready", "busy", "closed", "crashed")
export type ProviderSessionStatus = typeof ProviderSessionStatus.Type

/** A live provider process serving one or more provider threads. */
export const ProviderSession = Schema.Struct({
  id: ProviderSessionId,
  provider: ProviderName,
  pid: Schema.NullOr(Schema.Int),
  status: ProviderSessionStatus,
  workspace: Schema.NullOr(Schema.String),
  startedAt: Schema.String
})
export type ProviderSession = typeof ProviderSession.Type
