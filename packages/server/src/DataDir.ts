/** Where Skein keeps its database, provider state and token: `$SKEIN_HOME`, else `~/.skein`. */
import * as Os from "node:os"
import * as Path from "node:path"

export const defaultDataDir = (env: Readonly<Record<string, string | undefined>> = process.env): string =>
  env["SKEIN_HOME"] !== undefined && env["SKEIN_HOME"] !== "" ? env["SKEIN_HOME"] : Path.join(Os.homedir(), ".skein")
