/**
 * The wire protocol between the scripted adapter and the scripted provider
 * process: JSON lines over stdio. Requests `{id, method, params}` are answered by
 * `{id, result}` or `{id, error: {kind, message}}`; while a turn runs the provider
 * sends notifications `{method: "event", params: {nativeRef, event}}`.
 * A `turn/start` is answered once the turn is over, after its last event.
 */
import { Schema } from "effect"
import { ApprovalDecision, HandoffDelivery, HandoffPayload, ProviderEvent, ProviderFailureKind } from "@skein/domain"

export const WireHandoff = Schema.Struct({
  handoffId: Schema.String,
  delivery: HandoffDelivery,
  text: Schema.String
})
export type WireHandoff = typeof WireHandoff.Type

const NativeRefParams = Schema.Struct({ nativeRef: Schema.String })

/** Every method: its params and its result. */
export const Methods = {
  initialize: {
    params: Schema.Struct({}),
    result: Schema.Struct({ name: Schema.String, protocolVersion: Schema.Number })
  },
  "thread/start": {
    params: Schema.Struct({ workspace: Schema.NullOr(Schema.String), model: Schema.NullOr(Schema.String) }),
    result: Schema.Struct({ nativeRef: Schema.String })
  },
  "thread/resume": {
    params: NativeRefParams,
    result: Schema.Struct({ turns: Schema.Number })
  },
  "thread/fork": {
    params: Schema.Struct({ nativeRef: Schema.String, atTurnRef: Schema.NullOr(Schema.String) }),
    result: Schema.Struct({ nativeRef: Schema.String })
  },
  "thread/rollback": {
    params: Schema.Struct({ nativeRef: Schema.String, beforeTurnRef: Schema.String }),
    result: Schema.Struct({ removedTurns: Schema.Number })
  },
  "turn/start": {
    params: Schema.Struct({
      nativeRef: Schema.String,
      message: Schema.String,
      handoff: Schema.NullOr(WireHandoff),
      workspace: Schema.NullOr(Schema.String)
    }),
    result: Schema.Struct({ turnRef: Schema.String, status: Schema.Literal("completed", "interrupted") })
  },
  "turn/steer": {
    params: Schema.Struct({ nativeRef: Schema.String, message: Schema.String }),
    result: Schema.Struct({})
  },
  "turn/interrupt": {
    params: NativeRefParams,
    result: Schema.Struct({ interrupted: Schema.Boolean })
  },
  "approval/respond": {
    params: Schema.Struct({ nativeRef: Schema.String, approvalId: Schema.String, decision: ApprovalDecision }),
    result: Schema.Struct({})
  },
  summarise: {
    params: Schema.Struct({ payload: HandoffPayload, budgetTokens: Schema.Number }),
    result: Schema.Struct({ text: Schema.String })
  }
} as const
export type Methods = typeof Methods
export type Method = keyof Methods
export type ParamsOf<M extends Method> = Methods[M]["params"]["Type"]
export type ResultOf<M extends Method> = Methods[M]["result"]["Type"]

export const WireError = Schema.Struct({ kind: ProviderFailureKind, message: Schema.String })
export type WireError = typeof WireError.Type

export const Request = Schema.Struct({ id: Schema.Number, method: Schema.String, params: Schema.Unknown })
export type Request = typeof Request.Type

export const SuccessResponse = Schema.Struct({ id: Schema.Number, result: Schema.Unknown })
export const ErrorResponse = Schema.Struct({ id: Schema.Number, error: WireError })
export const EventNotification = Schema.Struct({
  method: Schema.Literal("event"),
  params: Schema.Struct({ nativeRef: Schema.String, event: ProviderEvent })
})
export type EventNotification = typeof EventNotification.Type

/** Anything the provider writes on stdout. */
export const Incoming = Schema.Union(ErrorResponse, SuccessResponse, EventNotification)
export type Incoming = typeof Incoming.Type
