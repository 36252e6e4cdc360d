/**
 * The thread actor's functional core: given the thread's state and what happened,
 * the events to append. No I/O; the actor persists the events, then folds them in.
 * One module per moment of a thread's life, under `plan/`:
 * - `RunDecision`: what a run is planned from (the resolver's decision, the provider);
 * - `StartPlan`: a run's start, the fallback when resuming failed, the native ref bound;
 * - `HandoffPlan`: context crossing into a run, and a pending handoff's summary;
 * - `ItemPlan`: a run's turn items;
 * - `FinishPlan`: a run's end, and the end of a run a restart found in flight;
 * - `CheckpointPlan`: a pending git checkpoint settled;
 * - `ChildPlan`: a native child agent's observe-only thread;
 * - `ApprovalPlan`: answers to approval requests.
 */
export type { ProviderInfo, RunDecision } from "./plan/RunDecision.js"
export { planBindNativeThread, planResumeFallback, planRunStart, type StartPlan } from "./plan/StartPlan.js"
export { planSummary } from "./plan/HandoffPlan.js"
export { planItems } from "./plan/ItemPlan.js"
export { planFinish, planRecovery } from "./plan/FinishPlan.js"
export { type CheckpointTaken, planCheckpointTaken } from "./plan/CheckpointPlan.js"
export { planObservedChild } from "./plan/ChildPlan.js"
export { approvalAnswer, planApproval } from "./plan/ApprovalPlan.js"
