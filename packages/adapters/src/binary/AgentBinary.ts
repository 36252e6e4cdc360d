/**
 * Finding an agent's executable: from the instance's `command`, else on PATH. npm
 * installs both agents as a small launcher (Codex: a Node script) or a placeholder
 * (Claude Code: a shell stub that a postinstall step replaces, and that stays a stub
 * where install scripts are blocked) beside a platform package that holds the native
 * executable; the locator follows a launcher or placeholder to that native file.
 * It then asks the executable for its version and checks it against the range Skein
 * was tested with. Every way this can go wrong is an `AgentBinaryProblem` that says
 * what to install or configure.
 */
import * as NodeChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Effect, Schema } from "effect"

export interface AgentBinarySpec {
  /** The driver name, for messages. */
  readonly driver: string
  /** The executable's name on PATH. */
  readonly executable: string
  /** The npm package a user installs. */
  readonly npmPackage: string
  /** Versions tested: at least `min`, below `below`. */
  readonly tested: { readonly min: string; readonly below: string }
  /** Native executables inside a platform package directory (`.../node_modules/@scope/pkg-linux-x64`). */
  readonly platformPackages: ReadonlyArray<string>
  /** Where the native file lies inside one platform package directory (may list a directory to scan). */
  readonly nativeIn: (platformDir: string) => ReadonlyArray<string>
}

export class AgentBinaryProblem extends Schema.TaggedError<AgentBinaryProblem>()("AgentBinaryProblem", {
  driver: Schema.String,
  problem: Schema.Literal("missing", "placeholder", "not_runnable", "untested_version"),
  path: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.String),
  detail: Schema.String,
  install: Schema.String
}) {
  override get message() {
    return `${this.detail}. ${this.install}`
  }
}

export interface LocatedBinary {
  /** The native executable (or, for a launcher without a platform package, the launcher). */
  readonly path: string
  /** Arguments the configured command put before the adapter's own. */
  readonly leadingArgs: ReadonlyArray<string>
  readonly version: string
}

/** `1.2.3` → [1, 2, 3]; anything else null. */
const parseSemver = (text: string): [number, number, number] | null => {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(text)
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null
}

const compare = (a: [number, number, number], b: [number, number, number]): number =>
  a[0] - b[0] || a[1] - b[1] || a[2] - b[2]

/** Whether `version` lies in [min, below). */
export const inTestedRange = (version: string, tested: AgentBinarySpec["tested"]): boolean => {
  const v = parseSemver(version)
  const min = parseSemver(tested.min)
  const below = parseSemver(tested.below)
  return v !== null && min !== null && below !== null && compare(v, min) >= 0 && compare(v, below) < 0
}

const isExecutableFile = (path: string): boolean => {
  try {
    Fs.accessSync(path, Fs.constants.X_OK)
    return Fs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** The first match of `name` on a PATH string. */
export const whichOnPath = (name: string, pathVariable: string): string | null => {
  for (const dir of pathVariable.split(Path.delimiter)) {
    if (dir.length === 0) continue
    const candidate = Path.join(dir, name)
    if (isExecutableFile(candidate)) return candidate
  }
  return null
}

/** ELF, Mach-O (either byte order, fat) or PE: a native program rather than a script. */
const isNativeExecutable = (path: string): boolean => {
  let fd: number | null = null
  try {
    fd = Fs.openSync(path, "r")
    const head = Buffer.alloc(4)
    Fs.readSync(fd, head, 0, 4, 0)
    const magic = head.readUInt32BE(0)
    return (
      magic === 0x7f454c46 ||
      magic === 0xfeedfacf ||
      magic === 0xcffaedfe ||
      magic === 0xfeedface ||
      magic === 0xcefaedfe ||
      magic === 0xcafebabe ||
      head.subarray(0, 2).toString("latin1") === "MZ"
    )
  } catch {
    return false
  } finally {
    if (fd !== null) Fs.closeSync(fd)
  }
}

/** `.../node_modules/@scope/name` that contains `file`, if any. */
const packageDirOf = (file: string): string | null => {
  let dir = Path.dirname(file)
  while (dir !== Path.dirname(dir)) {
    if (
      Fs.existsSync(Path.join(dir, "package.json")) &&
      Path.basename(Path.dirname(Path.dirname(dir))) === "node_modules"
    )
      return dir
    dir = Path.dirname(dir)
  }
  return null
}

/** The native executable of a launcher or placeholder: in a platform package nested in, or beside, its package. */
const nativeBeside = (spec: AgentBinarySpec, launcher: string): string | null => {
  const packageDir = packageDirOf(launcher)
  if (packageDir === null) return null
  const scopeDir = Path.dirname(packageDir)
  for (const platformPackage of spec.platformPackages) {
    const base = Path.basename(platformPackage)
    for (const platformDir of [
      Path.join(packageDir, "node_modules", platformPackage),
      Path.join(scopeDir, base),
      Path.join(Path.dirname(scopeDir), platformPackage)
    ]) {
      for (const candidate of spec.nativeIn(platformDir)) {
        if (isExecutableFile(candidate) && isNativeExecutable(candidate)) return candidate
      }
    }
  }
  return null
}

/** The platform packages of this machine, most specific first (`-musl` variants last). */
export const platformSuffixes = (): ReadonlyArray<string> => {
  const base = `${process.platform}-${process.arch}`
  return process.platform === "linux" ? [base, `${base}-musl`] : [base]
}

const runVersion = (path: string, leadingArgs: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.async<string, string>((resume) => {
    const child = NodeChildProcess.execFile(
      path,
      [...leadingArgs, "--version"],
      { env, timeout: 15_000, maxBuffer: 64 * 1024 },
      (error, stdout, stderr) => {
        if (error) resume(Effect.fail(`${error.message.split("\n")[0]} ${String(stderr).trim().slice(0, 300)}`.trim()))
        else resume(Effect.succeed(String(stdout)))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/**
 * Finds and checks the executable. `command` is the instance's configured command
 * (the executable, then leading arguments); without it the executable is looked up
 * on `env.PATH`.
 */
export const locateAgentBinary = (
  spec: AgentBinarySpec,
  options: {
    readonly command?: ReadonlyArray<string> | undefined
    readonly env: Record<string, string>
    readonly allowUntestedVersion?: boolean | undefined
  }
): Effect.Effect<LocatedBinary, AgentBinaryProblem> =>
  Effect.gen(function* () {
    const install = `Install it with \`npm install -g ${spec.npmPackage}@${spec.tested.min}\` (tested: ${spec.tested.min} up to, not including, ${spec.tested.below}), or set the instance's "command" to the path of the ${spec.executable} executable.`
    const problem = (
      kind: AgentBinaryProblem["problem"],
      path: string | null,
      version: string | null,
      detail: string
    ) => new AgentBinaryProblem({ driver: spec.driver, problem: kind, path, version, detail, install })
    const [configured, ...leadingArgs] = options.command ?? []
    const wanted = configured ?? spec.executable
    const found = wanted.includes("/")
      ? isExecutableFile(wanted)
        ? Path.resolve(wanted)
        : null
      : whichOnPath(wanted, options.env.PATH ?? "")
    if (found === null) {
      return yield* problem(
        "missing",
        configured ?? null,
        null,
        configured === undefined
          ? `No ${spec.executable} executable on PATH`
          : `The configured command ${JSON.stringify(configured)} is not an executable file`
      )
    }
    const real = Fs.realpathSync(found)
    let path = real
    if (!isNativeExecutable(real)) {
      const native = nativeBeside(spec, real)
      if (native !== null) path = native
      else if (Fs.readFileSync(real, "latin1").slice(0, 4096).includes("native binary not installed")) {
        return yield* problem(
          "placeholder",
          real,
          null,
          `${real} is npm's placeholder for ${spec.executable}: its platform package (${spec.platformPackages.join(" or ")}) is not installed`
        )
      }
    }
    const output = yield* runVersion(path, leadingArgs, options.env).pipe(
      Effect.mapError((why) => problem("not_runnable", path, null, `${path} --version failed: ${why}`))
    )
    const version = /(\d+\.\d+\.\d+)/.exec(output)?.[1]
    if (version === undefined) {
      return yield* problem(
        "not_runnable",
        path,
        null,
        `${path} --version printed no version (${JSON.stringify(output.trim().slice(0, 100))})`
      )
    }
    if (!options.allowUntestedVersion && !inTestedRange(version, spec.tested)) {
      return yield* problem(
        "untested_version",
        path,
        version,
        `${spec.executable} ${version} at ${path} is outside the versions Skein was tested with; set "allowUntestedVersion": true on the instance to use it anyway`
      )
    }
    return { path, leadingArgs, version } satisfies LocatedBinary
  })

/**
 * A locator for one instance that remembers a success (a later failure is looked up
 * again, so installing the binary needs no restart).
 */
export const cachedLocator = (locate: Effect.Effect<LocatedBinary, AgentBinaryProblem>) => {
  let found: LocatedBinary | null = null
  return Effect.suspend(() =>
    found !== null ? Effect.succeed(found) : Effect.tap(locate, (located) => Effect.sync(() => void (found = located)))
  )
}
