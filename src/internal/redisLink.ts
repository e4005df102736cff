/**
 * The Redis store's connections as the store sees them: the first connection awaited and the scripts loaded before
 * the first operation, whether commands can go out now, the losses of the connection, each operation's time limit,
 * and the wake-ups' subscription.
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as IORedis from "ioredis"

/** A client of ioredis: one server, or a Cluster. */
export type Client = IORedis.Redis | IORedis.Cluster

const isCluster = (client: Client): client is IORedis.Cluster => client.isCluster

/** An operation with no answer within its time limit. */
export class TimedOut extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${Duration.format(Duration.millis(ms))}`)
  }
}

/**
 * `answer`, or a `TimedOut` once `ms` have passed without it. The verdict waits for the event loop's next look at
 * its sockets after the timer: a process busy on its own (starting, JIT-compiling, decoding a large answer) reads an
 * answer that arrived while it was busy before it decides, so that its own pause is not taken for the server's. After
 * such a pause Node runs the timers that fell due before it reads its sockets, so a plain timer (Effect's, or
 * ioredis's `commandTimeout`) fails an answer that is already there: four processes starting at once on one healthy
 * local server fell back to memory so, most starts. A timer of its own rather than the `Clock`'s: the time limit is
 * the server's, in real time, and costs no fiber per operation.
 */
export const within = <A>(answer: Promise<A>, ms: number): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    // a timer, then setImmediate: after the timers, the loop reads its sockets, then runs what setImmediate queued (a
    // promise settles once: the verdict after an answer is read changes nothing)
    const timer = setTimeout(() => setImmediate(() => reject(new TimedOut(ms))), ms)
    answer.then((a) => {
      clearTimeout(timer)
      resolve(a)
    }, (e) => {
      clearTimeout(timer)
      reject(e)
    })
  })

/** Whether commands go out now: a connection not ready (lost, reconnecting, closed) fails an operation at once. */
export const isUp = (client: Client): boolean => client.status === "ready"

/**
 * Calls `f` on every event of `events` until the scope closes (the client may be the caller's and outlive the
 * store: its listeners go with the store).
 */
export const listen = (
  client: Client,
  events: ReadonlyArray<"ready" | "close">,
  f: () => void
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      for (const event of events) client.on(event, f)
    }),
    () =>
      Effect.sync(() => {
        for (const event of events) client.off(event, f)
      })
  )

/** A client that is connecting for the first time (a lazy one not yet asked to). */
const connecting = (client: Client) => ["wait", "connecting", "connect"].includes(client.status)

/**
 * Waits until the client is ready, at most `ms`: a client not connected yet (`lazyConnect`) is connected; a
 * connection that fails (the server away), or failed already, ends the wait at once, and the store starts in memory.
 */
export const firstConnection = (client: Client, ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (!connecting(client)) return resume(Effect.void)
    const ends = ["ready", "error", "close"] as const
    const off = () => {
      for (const end of ends) client.off(end, done)
    }
    const done = () => {
      off()
      resume(Effect.void)
    }
    for (const end of ends) client.once(end, done)
    if (client.status === "wait") client.connect().catch(() => undefined)
    return Effect.sync(off)
  }).pipe(Effect.timeout(Duration.millis(ms)), Effect.ignore)

/**
 * Loads the scripts on the server (on every master of a Cluster), so that an operation runs its script by digest in
 * one round trip; a server that lost them (restarted, flushed) answers NOSCRIPT and is sent the script itself.
 */
export const loadScripts = (client: Client, scripts: ReadonlyArray<string>): Promise<unknown> => {
  const servers: ReadonlyArray<IORedis.Redis> = isCluster(client) ? client.nodes("master") : [client]
  return Promise.all(servers.flatMap((server) => scripts.map((lua) => server.script("LOAD", lua))))
}

/**
 * The wake-ups: one connection per store, subscribed once (before the first operation, to every bucket's channel
 * under the prefix), so that no wake-up goes out before anyone listens. A message names the waiter first in line;
 * one for a waiter of this store that is not listening (between its answer and its sleep) is kept for it, once.
 * A wake-up missed while the connection is down only costs the waiter its timed wait. With the server up, the
 * subscription is awaited (at most `ms`); with the server away, it goes out when the server comes back.
 */
export const subscriberOf = (client: Client, pattern: string, ms: number) =>
  Effect.gen(function*() {
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() => {
        // connected now, and queueing while disconnected (the operations' client may do neither): a subscription
        // asked for while the server is away goes out when it returns, and ioredis subscribes again after a
        // reconnect. No ready check: its INFO, sent after a first SUBSCRIBE, is refused in subscriber mode and
        // resets the connection
        const options = { lazyConnect: false, enableOfflineQueue: true, enableReadyCheck: false }
        const duplicate = isCluster(client) ? client.duplicate([], options) : client.duplicate(options)
        // failures are seen by the operations; a subscriber that cannot connect only misses wake-ups
        duplicate.on("error", () => {})
        return duplicate
      }),
      (duplicate) => Effect.sync(() => duplicate.disconnect())
    )
    const waiting = new Map<string, Set<() => void>>()
    const kept = new Set<string>()
    // the waiters of this store: wake-ups of other processes' waiters are not kept
    const ours = new Set<string>()
    const keyOf = (channel: string, waiter: string) => `${channel}\n${waiter}`
    connection.on("pmessage", (_pattern: string, channel: string, waiter: string) => {
      const key = keyOf(channel, waiter)
      const resumes = waiting.get(key)
      if (resumes === undefined) {
        if (ours.has(waiter)) kept.add(key)
        return
      }
      waiting.delete(key)
      for (const resume of resumes) resume()
    })
    // asked for in any case (a server away is subscribed to when it comes back), awaited only from a server that is up
    const subscribed = yield* Effect.sync(() => connection.psubscribe(pattern).catch(() => undefined))
    if (isUp(client)) yield* Effect.promise(() => subscribed).pipe(Effect.timeout(Duration.millis(ms)), Effect.ignore)
    return {
      /** Makes `waiter` one of this store's (its wake-ups are kept for it). */
      expect: (waiter: string): void => {
        ours.add(waiter)
      },
      next: (channel: string, waiter: string): Effect.Effect<void> =>
        Effect.async<void>((resume) => {
          ours.add(waiter)
          const key = keyOf(channel, waiter)
          if (kept.delete(key)) return resume(Effect.void)
          const wake = () => resume(Effect.void)
          let resumes = waiting.get(key)
          if (resumes === undefined) {
            resumes = new Set()
            waiting.set(key, resumes)
          }
          resumes.add(wake)
          return Effect.sync(() => {
            resumes.delete(wake)
            if (resumes.size === 0 && waiting.get(key) === resumes) waiting.delete(key)
          })
        })
    }
  })
