/**
 * The emulator's per-key records: uploaded files, fine-tuning jobs and vector stores. Each key has its own
 * maps, so another key never sees them (its lookups answer 404). Progress (jobs, indexing) is computed from
 * timestamps on the emulator's `Clock`, so a `TestClock` drives it.
 *
 * @since 0.1.0
 */

/**
 * An uploaded file.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredFile {
  readonly id: string
  readonly filename: string
  readonly purpose: string
  readonly contentType: string
  readonly content: Uint8Array
  /** Upload time in epoch milliseconds. */
  readonly createdMs: number
  /** When a validation was requested (`GET /files/validate/{id}`), in epoch milliseconds. */
  validationRequestedMs?: number | undefined
}

/**
 * A fine-tuning job: its status follows from the times below.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredJob {
  readonly id: string
  readonly model: string
  readonly trainingFile: string
  readonly validationFile: string | null
  readonly suffix: string | null
  readonly nEpochs: number
  readonly batchSize: number
  readonly createdMs: number
  /** Why training fails when it starts (a bad training file), or `undefined`. */
  readonly problem: string | undefined
  /** Training tokens counted in the training file. */
  readonly tokens: number
  /** When the job was cancelled, if it was. */
  cancelledMs?: number | undefined
}

/**
 * A file added to a vector store, with its chunks or image.
 *
 * @since 0.1.0
 * @category models
 */
export interface IndexedFile {
  readonly fileId: string
  readonly filename: string
  readonly createdMs: number
  readonly bytes: number
  readonly chunkSize: number
  readonly chunkOverlap: number
  /** Text chunks and their vectors. */
  readonly chunks: ReadonlyArray<{ readonly text: string; readonly vector: ReadonlyArray<number> }>
  /** For an image: its `data:` URL and the vector of its file name. */
  readonly image: { readonly dataUrl: string; readonly vector: ReadonlyArray<number> } | undefined
  /** Why indexing fails (unsupported content), or `undefined`. */
  readonly problem: string | undefined
}

/**
 * A vector store.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredVectorStore {
  readonly id: string
  readonly name: string
  readonly createdMs: number
  readonly textModel: string
  readonly visionModel: string
  readonly dimensions: number
  readonly files: Map<string, IndexedFile>
  lastActiveMs: number
}

/**
 * How long a job waits in the queue, then trains, and how long indexing a file takes (milliseconds).
 *
 * @since 0.1.0
 * @category timings
 */
export const timings = { jobQueuedMs: 5_000, jobRunningMs: 20_000, indexingMs: 500 } as const

/**
 * The records of one key.
 *
 * @since 0.1.0
 * @category models
 */
export class KeyStore {
  readonly files = new Map<string, StoredFile>()
  readonly jobs = new Map<string, StoredJob>()
  readonly vectorStores = new Map<string, StoredVectorStore>()
}

/**
 * Every key's records.
 *
 * @since 0.1.0
 * @category models
 */
export class Store {
  private readonly keys = new Map<string, KeyStore>()

  /** The records of a key, created on first use. */
  of(key: string): KeyStore {
    let store = this.keys.get(key)
    if (store === undefined) {
      store = new KeyStore()
      this.keys.set(key, store)
    }
    return store
  }

  /**
   * Gives a key's records to its successor too (a rotated key: the account keeps its files, jobs and stores). The
   * revoked key keeps them as well, for the requests it authenticated before the rotation (no later one can).
   */
  share(from: string, to: string): void {
    this.keys.set(to, this.of(from))
  }
}

/**
 * The state of a job at `now`.
 *
 * @since 0.1.0
 * @category jobs
 */
export const jobStatus = (job: StoredJob, now: number): "queued" | "running" | "succeeded" | "failed" | "stopped" => {
  const started = job.createdMs + timings.jobQueuedMs
  const ended = started + timings.jobRunningMs
  if (
    job.cancelledMs !== undefined && job.cancelledMs < ended && (job.problem === undefined || job.cancelledMs < started)
  ) {
    return "stopped"
  }
  if (now < started) return "queued"
  if (job.problem !== undefined) return "failed"
  return now < ended ? "running" : "succeeded"
}

/**
 * When a job reached its final state (`undefined` while it runs).
 *
 * @since 0.1.0
 * @category jobs
 */
export const jobFinishedMs = (job: StoredJob, now: number): number | undefined => {
  const status = jobStatus(job, now)
  const started = job.createdMs + timings.jobQueuedMs
  if (status === "stopped") return job.cancelledMs
  if (status === "failed") return started
  if (status === "succeeded") return started + timings.jobRunningMs
  return undefined
}

/**
 * An event of a job's history.
 *
 * @since 0.1.0
 * @category jobs
 */
export interface JobEvent {
  readonly id: string
  readonly atMs: number
  readonly level: "info" | "warning" | "error"
  readonly type: string
  readonly message: string
}

/**
 * The events a job has emitted by `now`, oldest first.
 *
 * @since 0.1.0
 * @category jobs
 */
export const jobEvents = (job: StoredJob, now: number): Array<JobEvent> => {
  const events: Array<JobEvent> = []
  const push = (atMs: number, level: JobEvent["level"], type: string, message: string) => {
    if (atMs <= now) events.push({ id: `ftevent-${job.id.slice(6)}-${events.length + 1}`, atMs, level, type, message })
  }
  push(job.createdMs, "info", "submitted", `Fine-tuning job ${job.id} submitted for ${job.model}`)
  const status = jobStatus(job, now)
  const started = job.createdMs + timings.jobQueuedMs
  const finished = jobFinishedMs(job, now)
  if (status === "stopped") {
    if (job.cancelledMs! >= started) push(started, "info", "start", "Fine-tuning job started")
    push(job.cancelledMs!, "warning", "stopped", "Fine-tuning job was cancelled")
    return events
  }
  push(started, "info", "start", "Fine-tuning job started")
  if (status === "failed") {
    push(started, "error", "failed", `Fine-tuning job failed: ${job.problem}`)
    return events
  }
  const perEpoch = timings.jobRunningMs / job.nEpochs
  for (let epoch = 1; epoch < job.nEpochs; epoch++) {
    push(started + perEpoch * epoch, "info", "metrics", `Epoch ${epoch}/${job.nEpochs} completed`)
  }
  if (finished !== undefined) push(finished, "info", "succeeded", "Fine-tuning job succeeded")
  return events
}

/**
 * Checks a training file: JSON Lines, each line an object with a non-empty `messages` array of
 * `{role, content}` objects. Returns a readable problem, or `undefined` when the file is good.
 *
 * @since 0.1.0
 * @category jobs
 */
export const checkTrainingFile = (text: string): string | undefined => {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "")
  if (lines.length === 0) return "the training file is empty"
  for (const [i, line] of lines.entries()) {
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch {
      return `line ${i + 1} of the training file is not valid JSON`
    }
    const messages = typeof value === "object" && value !== null
      ? (value as { messages?: unknown }).messages
      : undefined
    if (!Array.isArray(messages) || messages.length === 0) {
      return `line ${i + 1} of the training file has no "messages" array of chat messages`
    }
    for (const message of messages) {
      if (
        typeof message !== "object" || message === null ||
        typeof (message as { role?: unknown }).role !== "string" ||
        !("content" in message)
      ) {
        return `line ${i + 1} of the training file has a message without "role" and "content"`
      }
    }
  }
  return undefined
}

/**
 * The status of a file in a vector store at `now`.
 *
 * @since 0.1.0
 * @category vector stores
 */
export const indexStatus = (file: IndexedFile, now: number): "in_progress" | "completed" | "failed" =>
  now < file.createdMs + timings.indexingMs ? "in_progress" : file.problem === undefined ? "completed" : "failed"

/**
 * Splits text into chunks of about `size` tokens (words and punctuation) that overlap by `overlap`.
 *
 * @since 0.1.0
 * @category vector stores
 */
export const chunkText = (text: string, size: number, overlap: number): Array<string> => {
  const words = text.split(/\s+/).filter((w) => w !== "")
  if (words.length === 0) return []
  const step = Math.max(1, size - Math.min(overlap, size - 1))
  const chunks: Array<string> = []
  for (let start = 0; start < words.length; start += step) {
    chunks.push(words.slice(start, start + size).join(" "))
    if (start + size >= words.length) break
  }
  return chunks
}

/**
 * ISO-8601 with milliseconds and no zone, as the service writes vector-store times.
 *
 * @since 0.1.0
 * @category time
 */
export const isoNoZone = (ms: number): string => new Date(ms).toISOString().replace("Z", "")

/**
 * ISO-8601 with an explicit `+00:00` offset, as the service writes file and job times.
 *
 * @since 0.1.0
 * @category time
 */
export const isoWithZone = (ms: number): string => new Date(ms).toISOString().replace("Z", "+00:00")
