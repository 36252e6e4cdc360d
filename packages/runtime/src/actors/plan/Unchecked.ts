/**
 * For `new E(props, unchecked)`: an event built only from the thread's stored state and
 * values the runtime made or checked itself, whose constructor check would find
 * nothing. The run driver checks the provider's turn ref and usage; a run's message,
 * model and command id were checked with the command that asked for the run (InputCheck,
 * against `run.start`'s payload schema, which is stricter than the run's), and an
 * agent's spawn prompt is a string its driver decoded. The store does not check an
 * event's fields again, so what a provider reports as turn items stays checked here. A
 * run's end builds three such events and its start two; checking them cost 0.1 ms of a
 * real agent's turn on cold caches at the end, and about as much at the start.
 */
export const unchecked = true
