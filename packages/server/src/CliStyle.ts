/**
 * How `skein` writes for a person: colour only on a terminal and never with NO_COLOR
 * (https://no-color.org: any non-empty value), and a progress line on a terminal only.
 */

export type Colour = "bold" | "dim" | "red" | "green" | "yellow" | "cyan"
export interface Style {
  readonly colour: boolean
}

const codes: Record<Colour, readonly [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  cyan: [36, 39]
}

export const plain: Style = { colour: false }

/** Whether to colour what goes to a stream: a terminal, and NO_COLOR unset or empty. */
export const colourFor = (
  stream: { readonly isTTY?: boolean | undefined },
  env: Readonly<Record<string, string | undefined>> = process.env
): Style => ({ colour: stream.isTTY === true && (env["NO_COLOR"] ?? "") === "" })

export const paint = (style: Style, colour: Colour, text: string): string =>
  style.colour ? `\u001b[${codes[colour][0]}m${text}\u001b[${codes[colour][1]}m` : text

// eslint-disable-next-line no-control-regex
const ansi = /\u001b\[[0-9;]*[A-Za-z]/g
/** The text without ANSI escape sequences. */
export const stripAnsi = (text: string): string => text.replace(ansi, "")

/** One line of text: line breaks and tabs shown as `⏎` and spaces, so one event stays one line. */
export const oneLine = (text: string, max = 200): string => {
  const flat = text.replace(/\r?\n/g, " ⏎ ").replace(/[\t\r]/g, " ")
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`
}

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/**
 * A progress line on a terminal (`⠋ run 3 on alpha: working 2.4 s`), redrawn every
 * 100 ms below the lines already printed; `print` writes a line above it. Without a
 * terminal it draws nothing and `print` is a plain write.
 */
export interface Progress {
  readonly print: (line: string) => void
  readonly label: (text: string) => void
  readonly stop: () => void
}

export const makeProgress = (out: NodeJS.WriteStream, enabled: boolean, style: Style = plain): Progress => {
  if (!enabled) {
    return { print: (line) => void out.write(`${line}\n`), label: () => {}, stop: () => {} }
  }
  const started = Date.now()
  let text = "waiting for the run"
  let frame = 0
  let shown = false
  let stopped = false
  const clear = () => {
    if (shown) out.write("\r\u001b[2K")
    shown = false
  }
  const draw = () => {
    clear()
    const seconds = ((Date.now() - started) / 1000).toFixed(1)
    out.write(`${paint(style, "cyan", frames[frame++ % frames.length]!)} ${text} ${seconds} s`)
    shown = true
  }
  const timer = setInterval(draw, 100)
  draw()
  return {
    print: (line) => {
      clear()
      out.write(`${line}\n`)
      if (!stopped) draw()
    },
    label: (next) => {
      text = next
    },
    stop: () => {
      stopped = true
      clearInterval(timer)
      clear()
    }
  }
}
