/**
 * What `call` and the human commands do, by group (declared in `Cli.ts`, which imports
 * this module when one of them runs). Only the typed client: nothing they import loads
 * the runtime, the adapters or SQLite.
 *
 * Each payload is checked against its method's schema before it is sent
 * (`CliClient`); failures are reported as `CliFailures` says.
 */
export { call } from "./CallCommand.js"
export { inspect } from "./InspectCommand.js"
export { fork, mergeBack, rollback, tree } from "./LineageCommands.js"
export { approve, interrupt, send, subagent } from "./RunCommands.js"
export { follow, handoff, providers, show, threadNew, threads } from "./ThreadCommands.js"
