/**
 * Hidden reasoning kept out of what leaves its provider: a scrubber replaces every
 * occurrence of the given secrets in a text with "[redacted]".
 */

const REDACTED = "[redacted]"

/** Whitespace runs as one space, trimmed. */
export const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim()

export type Scrub = (text: string) => string

const identity: Scrub = (text) => text

/**
 * A scrubber replacing every occurrence of the given secrets with "[redacted]". Linear in
 * the text: secrets are indexed by their first three characters (with a small bitmap in
 * front), so a thousand secrets cost about what one does.
 */
export const makeScrubber = (texts: Iterable<string>): Scrub => {
  const secrets = new Set<string>()
  for (const text of texts) {
    const whole = text.trim()
    if (whole.length === 0) continue
    secrets.add(whole)
    secrets.add(oneLine(whole))
    for (const line of whole.split("\n")) {
      const l = line.trim()
      if (l.length > 0) secrets.add(l)
    }
  }
  if (secrets.size === 0) return identity
  const short = [...secrets].filter((s) => s.length < 3)
  const long = [...secrets].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length)
  // A bitmap about 16 slots per secret (a power of two, 256 to 65,536) keeps misses cheap.
  let size = 256
  while (size < long.length * 16 && size < 65_536) size *= 2
  const mask = size - 1
  const bloom = new Uint8Array(size)
  const index = new Map<number, Array<string>>()
  for (const s of long) {
    const c0 = s.charCodeAt(0)
    const c1 = s.charCodeAt(1)
    const c2 = s.charCodeAt(2)
    bloom[(c0 * 961 + c1 * 31 + c2) & mask] = 1
    const key = c0 * 4294967296 + c1 * 65536 + c2
    const bucket = index.get(key)
    if (bucket) bucket.push(s)
    else index.set(key, [s])
  }
  return (text) => {
    let out = ""
    let last = 0
    let changed = false
    let i = 0
    if (long.length > 0) {
      const end = text.length - 3
      while (i <= end) {
        const c0 = text.charCodeAt(i)
        const c1 = text.charCodeAt(i + 1)
        const c2 = text.charCodeAt(i + 2)
        if (bloom[(c0 * 961 + c1 * 31 + c2) & mask] === 1) {
          const bucket = index.get(c0 * 4294967296 + c1 * 65536 + c2)
          const hit = bucket?.find((s) => text.startsWith(s, i))
          if (hit !== undefined) {
            out += text.slice(last, i) + REDACTED
            i += hit.length
            last = i
            changed = true
            continue
          }
        }
        i++
      }
    }
    let result = changed ? out + text.slice(last) : text
    for (const s of short) if (result.includes(s)) result = result.split(s).join(REDACTED)
    return result
  }
}
