/** How a `skein` command ends after it has reported its failure itself. */
import { Data } from "effect"

/** A failure already reported on stderr; the process exits with `code`. */
export class CliExit extends Data.TaggedError("CliExit")<{ readonly code: number }> {}
