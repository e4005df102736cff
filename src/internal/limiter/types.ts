/**
 * The rate limiter's shared types: what a request asks of it, what it grants, what becomes of a granted request and
 * what observers see. A leaf: the limiter's parts and the request path both import it, it imports nothing above.
 * @internal
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Stream from "effect/Stream"
import type {
  ApiError,
  BudgetExceeded,
  ContextLengthExceeded,
  LimiterUnavailable,
  QuotaExceeded,
  RequestTooLarge
} from "../../schemas/Errors.js"
import type { ModelList } from "../../schemas/Models.js"
import type { RateLimitInfo } from "../../schemas/RateLimit.js"
import type { Amounts, Dimension, Source } from "../budgets.js"
import type { Quota } from "../limitsSpec.js"
import type { Plan } from "../plans.js"
import type { Prices, Tally } from "../spend.js"

/** Makes an effect interruptible again inside an uninterruptible region. */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** What the limiter counts for one request: whose key, which model, and its tokens in and out. */
export interface Ticket {
  /** A fingerprint of the key (never the key). */
  readonly key: string
  readonly model: string
  /** The prompt's estimated tokens (0 when it has none, as an audio upload). */
  readonly input?: number | undefined
  /** The output reserved: the request's cap, else the model's `max_output_length`, else the default (0: none). */
  readonly output?: number | undefined
  /** The request's own output cap (`max_tokens`), when it sets one: with `input`, what must fit the context window. */
  readonly cap?: number | undefined
}

/**
 * What became of a granted request, which decides what it leaves in the budgets (see `Settlement.effectsOf`):
 * - `unsent`: never reached the server (no connection, interrupted before sending): it all comes back;
 * - `succeeded`: answered with success: counted from the answer, and evidence of what the window holds;
 * - `failed`: answered with an error that is no 429: the request stays counted, its tokens come back;
 * - `unanswered`: sent, no answer (dropped, timed out, interrupted): counted as reserved, the server may hold it;
 * - `throttled`: refused with a 429 on the window: it comes back, and the refusal is weighed (a limit, or noise);
 * - `spent`: refused because the key's budget is spent: it comes back, and the key stops.
 */
export type Outcome = "unsent" | "succeeded" | "failed" | "unanswered" | "throttled" | "spent"

/** A request's usage as its answer reports it. */
export interface Usage {
  readonly input: number
  readonly output: number
  /** Of `input`, the tokens read from the prompt cache, where reported. */
  readonly cached?: number | undefined
  /** Of `input`, the tokens written to the prompt cache, where reported. */
  readonly written?: number | undefined
}

/** A reservation made for one request. */
export interface Permit {
  /** What was reserved: one request, its input, its output and their sum. */
  readonly cost: Amounts
  /**
   * Settles the permit once by what became of its request, with the error it failed with if it did (a 429's wait,
   * a spent budget's words); later calls do nothing. True for a `throttled` request the limiter now paces itself (it
   * waits in line until the window frees, so the retry need not wait for the server's time first); false otherwise.
   */
  readonly settle: (outcome: Outcome, error?: ApiError | undefined) => Effect.Effect<boolean>
  /** The usage the answer reports: a budget used beyond its reservation is raised; lowered when configured to. */
  readonly reconcile: (usage: Usage) => Effect.Effect<void>
}

/** How sure the limiter is of a learnt limit: `probing` while unknown, `measured` by one 429, `confirmed` by two. */
export type Confidence = "probing" | "measured" | "confirmed"

/** One budget of a bucket as observers see it. */
export interface BudgetState {
  /** The limit per window (undefined while none is known: nothing is enforced). */
  readonly limit: number | undefined
  /** Where the limit comes from. */
  readonly source: Source
  /** For a limit learnt or being learnt: how sure the limiter is of it. */
  readonly confidence?: Confidence | undefined
  /** What the window counts of it now (sent or reserved). */
  readonly used: number
}

/** The state of one bucket, for dashboards and progress displays. */
export interface BucketState {
  /** A fingerprint of the key (never the key). */
  readonly key: string
  /** The model. */
  readonly model: string
  /** Every budget: requests, input tokens, output tokens, combined tokens. */
  readonly budgets: { readonly [D in Dimension]: BudgetState }
  /** Which budget made the last caller wait, if one did. */
  readonly binding: Dimension | undefined
  /** While nothing is known (limits being learnt): the requests allowed in flight. */
  readonly probe: number | undefined
  /** Milliseconds until the oldest entry leaves the window. */
  readonly nextResetMs: number
  /** Callers waiting in line. */
  readonly waiting: number
  /** Milliseconds the bucket stays closed after a 429 at a limit. */
  readonly blockedMs: number
  /** The current safety margin in milliseconds. */
  readonly marginMs: number
  /** Set when the key's budget is spent: why nothing is admitted. */
  readonly spent: string | undefined
}

/** Why a request was not admitted: it can never fit, the store cannot answer, or the key's budget is spent. */
export type Refusal = RequestTooLarge | LimiterUnavailable | QuotaExceeded | BudgetExceeded | ContextLengthExceeded

/** Settings of the limiter. */
export interface Options {
  /** The key's plan (each model's limits from its table, those it lacks learnt) or `auto` (the default: all learnt). */
  readonly tier?: Plan | "auto" | undefined
  /** Per-model limits over the plan's, `*` for every model without its own (headers still win where sent). */
  readonly limits?: Readonly<Record<string, Quota>> | undefined
  /** Length of the server's window (default 60 s). */
  readonly window?: Duration.DurationInput | undefined
  /** Extra time an entry counts, for network jitter (default 200 ms); widened after a 429 at a limit. */
  readonly margin?: Duration.DurationInput | undefined
  /**
   * After a response: `keep` (the default) lowers no reservation to the usage (OpenAI-style servers charge it at
   * admission, so giving the difference back early would overrun them); `actual` does.
   */
  readonly reconcile?: "keep" | "actual" | undefined
  /** Output tokens reserved when a request sets no cap and the model's `max_output_length` is unknown (1024). */
  readonly defaultMaxOutputTokens?: number | undefined
  /** Output caps per model, when requests set none. */
  readonly maxOutputTokens?: Readonly<Record<string, number>> | undefined
  /** When a budget is exhausted, send to the queue endpoint instead of waiting (default false). */
  readonly queueRouting?: boolean | undefined
  /**
   * The most the key may spend a calendar month (UTC), in the plans' currency (EUR): a warning at 80%, and from 100%
   * (or for a request whose estimate would cross it) requests fail with `BudgetExceeded` before they are sent.
   */
  readonly budget?: number | undefined
  /** Prices per million tokens by model, over the plan's table (for a model it lacks, or a contract of your own). */
  readonly prices?: Readonly<Record<string, Prices>> | undefined
  /**
   * Context windows in tokens by model, over the plan's table and the `max_sequence_length` of a `/models` listing:
   * a request whose prompt estimate and `max_tokens` exceed its model's fails with `ContextLengthExceeded` unsent.
   */
  readonly contextWindows?: Readonly<Record<string, number>> | undefined
  /** Whether requests are checked against their model's context window before sending (default true). */
  readonly contextCheck?: boolean | undefined
}

/** What a key spent in a month, by model, and its budget. */
export interface Spending {
  /** The calendar month, `YYYY-MM` (UTC). */
  readonly month: string
  readonly models: Readonly<Record<string, Tally>>
  readonly total: Tally
  readonly budget: number | undefined
  readonly currency: string
  /** Models answered with usage but priced nowhere (not in the plan's table, no configured price). */
  readonly unpriced: ReadonlyArray<string>
}

/** What the limiter provides. */
export interface Service {
  /** What a request to `path` with these parameters costs: its model, its estimated input and its output reserve. */
  readonly cost: (path: string, params: unknown) => {
    readonly model: string | undefined
    readonly input: number
    readonly output: number
    readonly cap?: number | undefined
  }
  /** Waits in line until the request fits every budget, then counts it; fails at once when it never can. */
  readonly acquire: (ticket: Ticket, onGranted?: (permit: Permit) => void) => Effect.Effect<Permit, Refusal>
  /**
   * `acquire`, with `then` run on how it ended (the permit, a refusal or an interruption) in the same
   * uninterruptible step; `restore` makes what `then` runs interruptible again.
   */
  readonly acquireWith: <A, E, R>(
    ticket: Ticket,
    then: (acquired: Exit.Exit<Permit, Refusal>, restore: Restore) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /** True when a request would have to wait now (for queue routing). */
  readonly wouldWait: (ticket: Ticket) => Effect.Effect<boolean>
  /** Learns from a response's headers: the limits they give and what the server counts. */
  readonly learn: (key: string, model: string, info: RateLimitInfo, status: number) => Effect.Effect<void>
  /**
   * The key's budget is spent (`error` says so): every model of the key stops admitting, and its waiting callers fail
   * with it (a permit settled as `spent` does this itself; this is for a request that held none, as one sent to the
   * queue).
   */
  readonly spent: (key: string, error: QuotaExceeded) => Effect.Effect<void>
  /**
   * Learns each model's `max_output_length` (for requests without an output cap) and `max_sequence_length` (its
   * context window) from the catalogue.
   */
  readonly learnModels: (models: ModelList) => Effect.Effect<void>
  /**
   * Learns each model's context window alone from a listing the caller did not ask for (see `needsWindow`); with
   * `key` (its fingerprint), keeps them in the store for that key, so that no process on it lists again for 30 days.
   */
  readonly learnWindows: (models: ModelList, key?: string) => Effect.Effect<void>
  /**
   * Learns the windows kept in the store for the key (its fingerprint), if any: whether they give `model`'s (false:
   * list). Optional: a limiter without it keeps nothing, and each process lists once per key.
   */
  readonly recallWindows?: ((key: string, model: string) => Effect.Effect<boolean>) | undefined
  /**
   * Whether a request's check against its model's context window waits for a `/models` listing: the check is on,
   * the request asks for more tokens than the smallest window the plans' tables know, and its model's window is
   * neither configured, nor in the tables, nor learnt.
   */
  readonly needsWindow: (ticket: Ticket) => boolean
  /** What the key (its fingerprint) spent this month, as the store keeps it for every process and run. */
  readonly spending: (key: string) => Effect.Effect<Spending>
  /** The state of every bucket now. */
  readonly snapshot: Effect.Effect<ReadonlyArray<BucketState>>
  /** The state of every bucket, after each change. */
  readonly changes: Stream.Stream<ReadonlyArray<BucketState>>
  /** False for a limiter that is off: the transport then skips estimating costs altogether. */
  readonly enabled: boolean
  /** Whether exhausted budgets route to the queue. */
  readonly queueRouting: boolean
}
