/**
 * The local emulator of AI Foundation Services: a real HTTP server on loopback, as a scoped layer for tests
 * and the demo, or as `aifs emulator` on a port.
 *
 * @example
 * ```ts
 * import { Emulator, Models, Node } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the emulator on a free loopback port, and the Node client configured against it
 * const ClientLive = Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
 *   Node.layer({ apiKey: Emulator.keyOf("standard4000"), baseUrl: emulator.baseUrl, tier: "standard4000" })))
 *
 * const program = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   const models = yield* Models.Models
 *   const list = yield* models.list()
 *   return `${emulator.baseUrl}: ${list.data.length} models, ${emulator.keys.length} development keys`
 * })
 *
 * // the emulator stops, its connections closed, when the program ends
 * const main = program.pipe(Effect.provide(ClientLive.pipe(Layer.provideMerge(Emulator.layer()))))
 *
 * Effect.runPromise(main).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpServer from "@effect/platform/HttpServer"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { Duplex } from "node:stream"
import * as App from "./app.js"
import { catalogue } from "./catalogue.js"
import type { Chaos, Stats } from "./chaos.js"
import { developmentUsers, type UserSpec as GatewayUserSpec } from "./gateway/state.js"
import type { Quota } from "./limits.js"
import { developmentKey, EmulatorState, type KeySpec, type Options } from "./state.js"

export type {
  /**
   * Fault rules, in order: the first matching rule that fires wins (`[]`: no faults).
   *
   * @since 0.1.0
   * @category models
   */
  Chaos,
  /**
   * One kind of failure the emulator can inject: a status, a delay, a dropped connection, a bad body.
   *
   * @since 0.1.0
   * @category models
   */
  Fault,
  /**
   * When to inject a fault: route, method, rate and how many times.
   *
   * @since 0.1.0
   * @category models
   */
  FaultRule,
  /**
   * What the emulator has seen: requests, connections and injected faults, for fault tests.
   *
   * @since 0.1.0
   * @category models
   */
  Stats
} from "./chaos.js"
export {
  /**
   * A mix of 5xx answers and dropped connections hitting a share `rate` of the requests.
   *
   * @since 0.1.0
   * @category constructors
   */
  faultMix
} from "./chaos.js"
export type {
  /**
   * How the emulated gateway behaves: users, token lifetime, upload and ingestion timing.
   *
   * @since 0.1.0
   * @category models
   */
  GatewayOptions,
  /**
   * A gateway user the emulator accepts: name, password, roles.
   *
   * @since 0.1.0
   * @category models
   */
  UserSpec as GatewayUserSpec
} from "./gateway/state.js"
export {
  /**
   * The default gateway users (development credentials, not secrets).
   *
   * @since 0.1.0
   * @category keys
   */
  developmentUsers as developmentGatewayUsers
} from "./gateway/state.js"
export type {
  /**
   * A flat quota per window: requests (`rpm`), and any of combined (`tpm`), input (`itpm`) and output (`otpm`) tokens.
   *
   * @since 0.1.0
   * @category models
   */
  Quota
} from "./limits.js"
export {
  /**
   * The seed tiers' flat quotas, basic 20 requests / 18,750 tokens and standard4000 600 / 150,000: a custom tier of the
   * seed's figures on every model (`tiers: { seed: fallbackQuotas.basic }`), where a plan's key may use its plan's
   * models only.
   *
   * @since 0.4.0
   * @category limits
   */
  fallbackQuotas
} from "./limits.js"
export {
  /**
   * EUR per million input and output tokens where a key's plan has no price for a model: 1 each.
   *
   * @since 0.4.0
   * @category limits
   */
  defaultPrices
} from "./spend.js"
export type {
  /**
   * An accepted key and its tier.
   *
   * @since 0.1.0
   * @category models
   */
  KeySpec,
  /**
   * How the emulator behaves: window, keys, tiers, stream pace, gateway, chaos.
   *
   * @since 0.1.0
   * @category models
   */
  Options
} from "./state.js"
export {
  /**
   * The development key of a tier, in the real `gen-` + 48 characters form (not a secret).
   *
   * @since 0.1.0
   * @category keys
   */
  developmentKey,
  /**
   * The default keys: one per plan (and, in an emulator given `tiers`, one per such tier besides).
   *
   * @since 0.1.0
   * @category keys
   */
  developmentKeys
} from "./state.js"

/**
 * A running emulator.
 *
 * @example
 * ```ts
 * import { Chat, Emulator, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // faults on demand: the next chat request dropped before any byte of its answer, then the counters
 * const program = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   yield* emulator.setChaos([{ fault: { kind: "resetBeforeBody" }, route: "/v2/chat/completions", times: 1 }])
 *   const chat = yield* Chat.Chat
 *   const ask = chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })
 *   yield* Effect.all([ask, ask], { concurrency: "unbounded" })
 *   const stats = yield* emulator.stats
 *   return `${stats.received} requests received, ${stats.faults.resetBeforeBody} dropped (and retried)`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => 3 requests received, 1 dropped (and retried)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Emulator extends Context.Tag("effect-aifs/Emulator")<Emulator, Emulator.Service>() {}

/**
 * The types of the `Emulator` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Emulator {
  /**
   * What `Emulator` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The origin, e.g. `http://127.0.0.1:41234`. */
    readonly url: string
    /** The `/v2` base to configure a client with. */
    readonly baseUrl: string
    /** The `/v1` base. */
    readonly v1Url: string
    /** The queue base. */
    readonly queueUrl: string
    /** The port it listens on. */
    readonly port: number
    /** The keys it accepts now. */
    readonly keys: ReadonlyArray<KeySpec>
    /** The first accepted key of a tier. */
    readonly keyFor: (tier: string) => string | undefined
    /**
     * Rotates a key: revokes it and issues a new one (`gen-` + 48 random characters) with the same tier and
     * settings, files, jobs and vector stores, and windows of its own. Requests already authenticated finish; any
     * later one with the old key gets 401. Returns the new key. A key the emulator does not accept is a defect.
     */
    readonly rotateKey: (key: string) => Effect.Effect<string>
    /** The retrieval gateway's base URL (`<url>/gateway`). */
    readonly gatewayUrl: string
    /** The users the gateway accepts (with their passwords: development credentials, not secrets). */
    readonly gatewayUsers: ReadonlyArray<GatewayUserSpec>
    /** Replaces the fault rules (their `times` counts start again); `[]` turns faults off. */
    readonly setChaos: (chaos: Chaos) => Effect.Effect<void>
    /**
     * Sets a tier's quota from now on, as a plan upgraded or cut mid-run (the windows keep what they counted): a custom
     * tier's, or on a plan's tier one flat quota for every model in place of the plan's table. A tier that is no plan
     * and has no quota is a defect.
     */
    readonly setQuota: (tier: string, quota: Quota) => Effect.Effect<void>
    /** EUR a key's project has spent this month of the emulator's clock (see `KeySpec.monthlyBudget`). */
    readonly spent: (key: string) => Effect.Effect<number>
    /** Requests received, in flight and aborted, open connections, injected faults by kind. */
    readonly stats: Effect.Effect<Stats>
  }
}

/**
 * Where to listen, besides the behaviour options.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServeOptions extends Options {
  /** Interface to bind (default `127.0.0.1`). */
  readonly host?: string | undefined
  /** Port (default 0: any free port). */
  readonly port?: number | undefined
}

/**
 * The emulator, listening until the layer's scope closes (open connections are closed with it).
 *
 * @example
 * ```ts
 * import { Emulator } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a key of a custom tier, a 10-second window, and a gateway user of its own
 * const EmulatorLive = Emulator.layer({
 *   port: 0,
 *   window: "10 seconds",
 *   tiers: { tiny: { rpm: 5, tpm: 2_000 } },
 *   keys: [{ key: "gen-my-test-key", tier: "tiny" }],
 *   gateway: { users: [{ username: "alice", password: "alice-password", roles: ["CHAT_USER"] }] }
 * })
 *
 * const program = Effect.map(Emulator.Emulator, (emulator) => {
 *   const users = emulator.gatewayUsers.map((user) => user.username)
 *   return `${emulator.keyFor("tiny")} at ${emulator.baseUrl}, gateway users: ${users.join(", ")}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(EmulatorLive))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ServeOptions = {}): Layer.Layer<Emulator, HttpServerError.ServeError> =>
  Layer.unwrapEffect(Effect.sync(() => serveWith(withClientErrors(createServer()), options)))

/**
 * Requests Node rejects before the application sees them (a header block over 16 KiB, a malformed request
 * line) get a status with a `detail` like every other client mistake, instead of Node's bare answer.
 */
const withClientErrors = (server: Server): Server =>
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // as Node's own handler: answer only on a connection that has not answered anything yet
    if (
      error.code === "ECONNRESET" || !socket.writable || (socket as Duplex & { bytesWritten: number }).bytesWritten > 0
    ) {
      socket.destroy()
      return
    }
    const [status, reason] = error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large"] as const
      : [400, "Bad Request"] as const
    const body = JSON.stringify({ detail: `${reason}: the request could not be read as HTTP/1.1` })
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${
        Buffer.byteLength(body)
      }\r\nconnection: close\r\n\r\n${body}`
    )
  })

const serveWith = (server: Server, options: ServeOptions): Layer.Layer<Emulator, HttpServerError.ServeError> => {
  const host = options.host ?? "127.0.0.1"
  const serve = Layer.scoped(
    Emulator,
    Effect.gen(function*() {
      const state = new EmulatorState(options)
      yield* HttpServer.serveEffect(App.make(state))
      // streams in flight would hold server.close() open: end them when the emulator stops
      yield* Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections()))
      const address = yield* HttpServer.addressWith((address) => Effect.succeed(address))
      const port = address._tag === "TcpAddress" ? address.port : 0
      const hostname = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host
      const url = `http://${hostname}:${port}`
      return {
        url,
        baseUrl: `${url}/v2`,
        v1Url: `${url}/v1`,
        queueUrl: `${url}/queue`,
        port,
        get keys() {
          return [...state.keys.values()]
        },
        keyFor: (tier: string) => [...state.keys.values()].find((k) => k.tier === tier)?.key,
        rotateKey: (key: string) =>
          Effect.sync(() => state.rotateKey(key, `gen-${randomBytes(24).toString("hex")}`).key),
        gatewayUrl: `${url}/gateway`,
        gatewayUsers: options.gateway?.users ?? developmentUsers,
        setChaos: (chaos: Chaos) => Effect.sync(() => state.chaos.set(chaos)),
        setQuota: (tier: string, quota: Quota) => Effect.sync(() => state.setQuota(tier, quota)),
        spent: (key: string) => Effect.map(Clock.currentTimeMillis, (now) => state.spentOf(key, now)),
        stats: Effect.map(connectionsOf(server), (connections) => state.chaos.snapshot(connections))
      }
    })
  )
  return serve.pipe(Layer.provide(NodeHttpServer.layer(() => server, { port: options.port ?? 0, host })))
}

const connectionsOf = (server: Server): Effect.Effect<number> =>
  Effect.async<number>((resume) => {
    server.getConnections((error, count) => resume(Effect.succeed(error ? 0 : count)))
  })

/**
 * The ids of the models the emulator serves.
 *
 * @since 0.1.0
 * @category catalogue
 */
export const models: ReadonlyArray<string> = catalogue.map((model) => model.id)

/**
 * The development key of a tier (the emulator accepts it by default).
 *
 * @since 0.1.0
 * @category keys
 */
export const keyOf = (tier: "basic" | "standard4000"): string => developmentKey(tier)
