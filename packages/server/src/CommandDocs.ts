/**
 * The help of every `skein` command as data, in Skein's words: what it does, each
 * positional and option, and an example (`Help.ts` renders it). No Effect here: help
 * is answered before Effect loads.
 */

export interface CommandDoc {
  /** The words after `skein`: `send`, `thread new`. */
  readonly path: string
  readonly usage: string
  readonly summary: string
  /** More sentences, each printed as a paragraph. */
  readonly details?: ReadonlyArray<string>
  readonly args?: ReadonlyArray<readonly [name: string, text: string]>
  readonly options?: ReadonlyArray<readonly [flags: string, text: string]>
  readonly examples: ReadonlyArray<string>
  /** Takes --url and --token (a command that talks to a daemon). */
  readonly client?: boolean
  /** Takes --json. */
  readonly json?: boolean
}

export const connectionOptions: ReadonlyArray<readonly [string, string]> = [
  [
    "--url URL",
    "The daemon to talk to (env SKEIN_URL). Default ws://127.0.0.1:7878/rpc, where `skein daemon` listens unless told otherwise."
  ],
  [
    "--token TOKEN",
    "The daemon's token (env SKEIN_TOKEN). Without it, the token file of a daemon on this machine is read ($SKEIN_HOME/token, else ~/.skein/token)."
  ]
]
export const jsonOption: readonly [string, string] = [
  "--json",
  "Print the result as JSON (one object per line for streams) and failures as a typed JSON error on stderr."
]

const thread = ["THREAD", "A thread id (thr_…), as `skein thread new` or `skein threads` prints it."] as const
const runArg = (what: string) =>
  ["RUN", `${what}: its ordinal (1, 2, … as \`skein show\` prints them) or its id (run_…).`] as const
const provider = [
  "PROVIDER",
  "A provider instance name (`skein providers` lists them; without --config: alpha and beta, both scripted)."
] as const

export const commandDocs: ReadonlyArray<CommandDoc> = [
  {
    path: "daemon",
    usage: "skein daemon [--port N] [--db FILE] [--config FILE] [options]",
    summary: "Run Skein: serve threads, runs and providers to `skein` commands and programs over WebSocket.",
    details: [
      "It keeps running until interrupted (Ctrl-C or SIGTERM), then closes gracefully. Its data go in the data directory: the database skein.db and the token file."
    ],
    options: [
      ["--port N", "The port to listen on (default 7878, where every client looks by default). 0 picks a free port."],
      ["--host HOST", "The address to bind (default 127.0.0.1). Any other needs --token."],
      ["--db FILE", "The SQLite database (default DATA_DIR/skein.db)."],
      [
        "--store URL",
        "A PostgreSQL database instead (postgresql://USER@HOST:PORT/DB; or SKEIN_STORE, the password then out of the process list, or PGPASSWORD); Skein creates its tables there."
      ],
      ["--cluster", "Join a cluster: this daemon becomes one of the runners sharing the --store database's threads."],
      ["--runner-host HOST", "With --cluster: the address the other runners reach this one at (default 127.0.0.1)."],
      ["--runner-port N", "With --cluster: the port for the other runners (default: a free one)."],
      [
        "--lease-ms N",
        "With --cluster: how long a dead runner's threads wait before another takes them (default 35000)."
      ],
      [
        "--config FILE",
        "Provider instances, as JSON (see the README). Default: two scripted providers, alpha and beta."
      ],
      ["--data-dir DIR", "The data directory (default $SKEIN_HOME, else ~/.skein)."],
      [
        "--token TOKEN",
        "Require this token (env SKEIN_TOKEN; 32 characters or more). Default: the one in DATA_DIR/token, made on first start."
      ],
      ["--allow-origin ORIGIN", "Let web pages of this origin connect (e.g. http://localhost:5173). Repeatable."],
      [
        "--allow-host NAME",
        "Answer requests addressed to this host name too (e.g. skein.internal). Repeatable. On a loopback address only loopback names are answered by default."
      ],
      ["--max-frame-bytes N", "The largest RPC message accepted, in bytes (default 4 MiB)."],
      [
        "--log-format FORMAT",
        "logfmt (default) or json: one object a line on stderr, with the trace and span ids when traced."
      ]
    ],
    examples: [
      "skein daemon",
      "skein daemon --port 0 --db ./skein.db --config providers.json",
      "SKEIN_STORE=postgresql://skein:secret@127.0.0.1:5432/skein skein daemon"
    ]
  },
  {
    path: "stdio",
    usage: "skein stdio [--db FILE] [--config FILE] [--data-dir DIR]",
    summary:
      "Serve Skein's RPC on stdin/stdout, one JSON message per line, for a program that runs Skein as its child.",
    options: [
      ["--db FILE", "The SQLite database (default DATA_DIR/skein.db)."],
      [
        "--store URL",
        "A PostgreSQL database instead (postgresql://USER@HOST:PORT/DB; or SKEIN_STORE, the password then out of the process list, or PGPASSWORD); Skein creates its tables there."
      ],
      ["--config FILE", "Provider instances, as JSON. Default: two scripted providers, alpha and beta."],
      ["--data-dir DIR", "The data directory (default $SKEIN_HOME, else ~/.skein)."]
    ],
    examples: ["skein stdio --db ./skein.db"]
  },
  {
    path: "acp",
    usage: "skein acp [--db FILE] [--config FILE] [--data-dir DIR] [--url URL] [--token TOKEN]",
    summary:
      "Be an ACP agent on stdin/stdout for an editor (Zed, a Neovim or Emacs ACP client): each session a thread, each prompt a run on the session's provider.",
    details: [
      "The editor picks the provider with the session option `provider`; switching between prompts hands the new one what it missed. Approvals become permission requests; cancel interrupts the run; loading a session replays its thread."
    ],
    options: [
      ["--db FILE", "The SQLite database (default DATA_DIR/skein.db)."],
      [
        "--store URL",
        "A PostgreSQL database instead (postgresql://USER@HOST:PORT/DB; or SKEIN_STORE, the password then out of the process list, or PGPASSWORD); Skein creates its tables there."
      ],
      ["--config FILE", "Provider instances, as JSON. Default: two scripted providers, alpha and beta."],
      ["--data-dir DIR", "The data directory (default $SKEIN_HOME, else ~/.skein)."],
      [
        "--url URL",
        "Serve a running daemon's threads instead (ws://HOST:PORT/rpc); --db, --config and --data-dir are then not used."
      ],
      ["--token TOKEN", "With --url: the daemon's token (default $SKEIN_TOKEN, else the one in the data directory)."]
    ],
    examples: ["skein acp --config ~/.skein/providers.json", "skein acp --url ws://127.0.0.1:7878/rpc"]
  },
  {
    path: "call",
    usage: "skein call METHOD [JSON] [--limit N]",
    summary: "Call any RPC method with a JSON payload and print its JSON result (one line per item for streams).",
    details: ["Failures print the typed error as JSON on stderr and exit 1."],
    args: [
      [
        "METHOD",
        "The method: thread.create, thread.get, thread.list, thread.events, run.start, run.interrupt, thread.fork, thread.mergeBack, thread.rollback, subagent.spawn, transfer.list, handoff.get, approval.respond, provider.list, thread.locate, thread.toolCredential."
      ],
      ["JSON", "The payload, a JSON object (default {})."]
    ],
    options: [["--limit N", "For a stream (thread.events): stop after N items."]],
    client: true,
    examples: [
      `skein call thread.create '{"title":"demo"}'`,
      `skein call thread.events '{"threadId":"thr_…"}' --limit 20`
    ]
  },
  {
    path: "threads",
    usage: "skein threads [--root THREAD] [--parent THREAD] [--limit N]",
    summary: "List threads, the most recently active first: id, last activity, title, lineage and workspace.",
    options: [
      ["--root THREAD", "Only the threads of this root's lineage tree (the root itself, its forks, subagents …)."],
      ["--parent THREAD", "Only the threads made directly from this one (its forks and subagents)."],
      ["--limit N", "Show at most N threads (default 50)."]
    ],
    client: true,
    json: true,
    examples: ["skein threads", "skein threads --root thr_… --json"]
  },
  {
    path: "thread",
    usage: "skein thread new|list …",
    summary: "Make a thread (`thread new`) or list threads (`thread list`, the same as `skein threads`).",
    examples: ["skein thread new --workspace ~/code/app --title 'fix the build'", "skein thread list"]
  },
  {
    path: "thread new",
    usage: "skein thread new [--workspace DIR] [--title TEXT]",
    summary: "Make a new thread and print its id.",
    details: [
      "A thread is one conversation; any provider can take a turn on it. Its workspace is where its agents act: when it is a git repository, Skein checkpoints it after every run (refs under refs/skein/ in that repository), so a rollback can restore its files."
    ],
    options: [
      [
        "--workspace DIR",
        "The project directory the thread's agents work in (an existing directory; a relative path is taken from the current directory). Default: none."
      ],
      ["--title TEXT", "A title shown by `skein threads` and `skein show` (500 characters at most)."]
    ],
    client: true,
    json: true,
    examples: ["T=$(skein thread new --workspace . --title 'fix the build')"]
  },
  {
    path: "thread list",
    usage: "skein thread list [--root THREAD] [--parent THREAD] [--limit N]",
    summary: "The same as `skein threads`.",
    options: [
      ["--root THREAD", "Only the threads of this root's lineage tree."],
      ["--parent THREAD", "Only the threads made directly from this one."],
      ["--limit N", "Show at most N threads (default 50)."]
    ],
    client: true,
    json: true,
    examples: ["skein thread list --parent thr_…"]
  },
  {
    path: "send",
    usage: "skein send THREAD PROVIDER MESSAGE [--model NAME] [--clean-context] [--budget TOKENS] [--when-busy MODE]",
    summary: "Send a message to a provider on a thread and show the run as it happens, then a summary.",
    details: [
      "On a terminal a progress line runs while the agent works; piped, it prints plain lines. Each item is printed as it arrives: commands with their exit code, files changed, plans, approvals with the command that answers them, subagents with their thread, refusals, the reply. It ends with the run's ordinal and id, the provider thread, how its context was resolved (native, delta or portable, with the handoff id), the tokens used and the duration.",
      "It exits 1 when the run fails or is interrupted."
    ],
    args: [thread, provider, ["MESSAGE", "What to say (not empty)."]],
    options: [
      ["--model NAME", "Ask the provider for this model for the run."],
      [
        "--clean-context",
        "Start a fresh provider thread that receives a full summary of the conversation, instead of resuming."
      ],
      ["--budget TOKENS", "The most tokens a handoff to this run may take (1024 to 64000, default 16000)."],
      [
        "--when-busy MODE",
        "If the thread has a run going: refuse (the default), queue (run it once the runs before it end; queued runs survive a restart), steer (add the message to the running turn where its provider can), or interrupt (stop that run and start this one)."
      ]
    ],
    client: true,
    json: true,
    examples: [
      `skein send thr_… alpha "add a test for the parser"`,
      `skein send thr_… beta "review what alpha did" --json`
    ]
  },
  {
    path: "show",
    usage: "skein show THREAD [--messages]",
    summary:
      "Show a thread: its workspace and lineage, each run with the user's message, the reply and its items in brief, how each run got its context, provider coverage and handoffs.",
    args: [thread],
    options: [["--messages", "Only the conversation: each run's message, reply and items."]],
    client: true,
    json: true,
    examples: ["skein show thr_…", "skein show thr_… --messages"]
  },
  {
    path: "follow",
    usage: "skein follow THREAD [--from N] [--limit N]",
    summary:
      "Print a thread's events, one line each with its time: the past ones, then live ones as they happen, until interrupted (Ctrl-C) or --limit.",
    args: [thread],
    options: [
      ["--from N", "Start at event N (the #N each line shows; default 1, the first)."],
      ["--limit N", "Stop after N events."]
    ],
    client: true,
    json: true,
    examples: ["skein follow thr_…", "skein follow thr_… --from 40 --limit 10"]
  },
  {
    path: "interrupt",
    usage: "skein interrupt THREAD [--run RUN]",
    summary: "Interrupt the thread's run in flight, or take a queued run out of the queue; it ends as interrupted.",
    args: [thread],
    options: [
      ["--run RUN", "A queued run (run_…, as `skein send --when-busy queue` printed it) to cancel before it starts."]
    ],
    client: true,
    json: true,
    examples: ["skein interrupt thr_…", "skein interrupt thr_… --run run_…"]
  },
  {
    path: "approve",
    usage: "skein approve THREAD [APPROVAL] accept|decline|cancel",
    summary: "Answer an agent's approval request: accept, decline, or cancel (stop the turn).",
    args: [
      thread,
      [
        "APPROVAL",
        "The approval id (apr_…), as `skein send` and `skein show` print it. Default: the thread's open approval, when it has exactly one."
      ],
      ["DECISION", "accept, decline or cancel."]
    ],
    client: true,
    json: true,
    examples: ["skein approve thr_… accept", "skein approve thr_… apr_… decline"]
  },
  {
    path: "subagent",
    usage: "skein subagent THREAD PROVIDER PROMPT",
    summary:
      "Start a subagent: a child thread of THREAD, given the parent's context, whose first run on PROVIDER starts with PROMPT. Prints the child thread's id; its result reaches the parent's next run.",
    args: [thread, provider, ["PROMPT", "What the subagent is to do."]],
    client: true,
    json: true,
    examples: [`skein subagent thr_… beta "write the migration for the new column"`]
  },
  {
    path: "handoff",
    usage: "skein handoff ID",
    summary:
      "Show a handoff: the context artifact Skein wrote when context crossed from one provider thread to another (which runs it covers, who wrote it, its size), then its text as the agent read it.",
    args: [["ID", "A handoff id (hof_…), as `skein show` and `skein send` print it."]],
    client: true,
    json: true,
    examples: ["skein handoff hof_…"]
  },
  {
    path: "providers",
    usage: "skein providers",
    summary:
      "List the daemon's provider instances: driver, model, capabilities, live sessions, and whether each is usable.",
    client: true,
    json: true,
    examples: ["skein providers"]
  },
  {
    path: "fork",
    usage: "skein fork THREAD [--run RUN | --checkpoint ID] [--side-chat] [--title TEXT]",
    summary:
      "Fork a thread at a stable point and print the fork's id. Cheap: nothing is copied; the fork's first run resolves its context (natively when the provider can fork).",
    details: [
      "A fork shares its source's workspace (the same directory, not a copy): runs on both change the same files."
    ],
    args: [thread],
    options: [
      ["--run RUN", "Fork after this run: its ordinal or its id (default: the latest completed run)."],
      ["--checkpoint ID", "Fork at this checkpoint (chk_…) instead."],
      ["--side-chat", "A side chat: a fork shown only with its parent, for a question on the side."],
      ["--title TEXT", "The fork's title."]
    ],
    client: true,
    json: true,
    examples: ["skein fork thr_… --run 2 --title 'try another approach'"]
  },
  {
    path: "merge-back",
    usage: "skein merge-back FORK",
    summary: "Bring a fork's work back: its source thread's next run receives what the fork did since it was made.",
    args: [["FORK", "The fork's thread id."]],
    client: true,
    json: true,
    examples: ["skein merge-back thr_…"]
  },
  {
    path: "rollback",
    usage: "skein rollback THREAD RUN [--restore-files [--dry-run]]",
    summary:
      "Roll a thread back to run RUN: later runs become rolled_back and leave the conversation (forks keep them).",
    details: [
      "With --restore-files the workspace's files go back to RUN's checkpoint too; the work tree as it was is saved first under a ref in your repository, and the command prints how to undo."
    ],
    args: [thread, runArg("The run to keep as the last (0 empties the thread)")],
    options: [
      ["--restore-files", "Also write the workspace back to RUN's checkpoint (a git workspace)."],
      ["--dry-run", "With --restore-files: print what would change, and change nothing."]
    ],
    client: true,
    json: true,
    examples: ["skein rollback thr_… 3", "skein rollback thr_… 3 --restore-files --dry-run"]
  },
  {
    path: "tree",
    usage: "skein tree THREAD",
    summary: "The lineage tree of a thread: its forks, side chats and subagents, their coverage and pending transfers.",
    args: [thread],
    client: true,
    json: true,
    examples: ["skein tree thr_…"]
  },
  {
    path: "inspect",
    usage: "skein inspect [THREAD] [--open]",
    summary:
      "The address of the daemon's inspector page (threads, lanes of provider threads, handoffs), with the token in its fragment.",
    args: [["THREAD", "A thread to open (thr_…); without it, the list of threads."]],
    options: [["--open", "Hand the address to the system's browser (xdg-open, open)."]],
    client: true,
    examples: ["skein inspect", "skein inspect thr_… --open"]
  },
  {
    path: "demo",
    usage: "skein demo",
    summary: "Run the seed example offline (two scripted providers, nine runs) and print the coverage table.",
    json: true,
    examples: ["skein demo"]
  },
  {
    path: "help",
    usage: "skein help [COMMAND]",
    summary: "Print the help of a command (the same as `skein COMMAND --help`).",
    args: [["COMMAND", "A command, e.g. send or thread new."]],
    examples: ["skein help send"]
  }
]
