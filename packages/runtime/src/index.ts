export * from "./Orchestrator.js"
export * from "./store/ThreadState.js"
