/**
 * A `multipart/form-data` body encoded to bytes: portable across HTTP clients (Node's global `FormData`
 * and the undici the Node layer uses disagree across versions) and visible to the scripted test transport.
 * @internal
 */

/** A text field or a file. */
export type MultipartPart =
  | { readonly name: string; readonly value: string }
  | {
    readonly name: string
    readonly filename: string
    readonly content: Uint8Array | string
    readonly contentType?: string | undefined
  }

const encoder = new TextEncoder()

const quote = (text: string): string =>
  text.replace(/["\\\r\n]/g, (c) => (c === "\"" ? "%22" : c === "\\" ? "\\\\" : ""))

/** Encodes parts with a boundary that appears in none of them. */
export const encodeMultipart = (
  parts: ReadonlyArray<MultipartPart>,
  seed = 0
): { readonly body: Uint8Array; readonly contentType: string } => {
  const boundary = `----effect-aifs-${seed.toString(36)}-${parts.length.toString(36)}-boundary`
  const chunks: Array<Uint8Array> = []
  for (const part of parts) {
    if ("value" in part) {
      chunks.push(encoder.encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="${quote(part.name)}"\r\n\r\n${part.value}\r\n`
      ))
      continue
    }
    chunks.push(encoder.encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="${quote(part.name)}"; filename="${
        quote(part.filename)
      }"\r\nContent-Type: ${part.contentType ?? "application/octet-stream"}\r\n\r\n`
    ))
    chunks.push(typeof part.content === "string" ? encoder.encode(part.content) : part.content)
    chunks.push(encoder.encode("\r\n"))
  }
  chunks.push(encoder.encode(`--${boundary}--\r\n`))
  const size = chunks.reduce((n, c) => n + c.length, 0)
  const body = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.length
  }
  const text = new TextDecoder("latin1").decode(body)
  // a boundary inside a file would cut it: pick another
  if (text.split(`--${boundary}`).length - 1 !== parts.length + 1) return encodeMultipart(parts, seed + 1)
  return { body, contentType: `multipart/form-data; boundary=${boundary}` }
}
