/** Where the inspector is: the threads, a thread, a run of it or a handoff of it. */
export type Route =
  | { readonly view: "threads" }
  | { readonly view: "thread"; readonly threadId: string }
  | { readonly view: "run"; readonly threadId: string; readonly ordinal: number }
  | { readonly view: "handoff"; readonly threadId: string; readonly handoffId: string }

export type Go = (route: Route) => void

/** A thread's name: its title, else its id. */
export const nameOf = (thread: { readonly id: string; readonly title: string }): string => thread.title || thread.id
