/**
 * Decoding a JSON body with a response's schema: compiled once per schema, tolerant of extra fields, its failures
 * bounded and redacted `DecodeError`s.
 * @internal
 */
import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { DecodeError } from "../../schemas/Errors.js"
import { excerpt } from "../errors.js"
import type { ResponseMetadata } from "./types.js"

const schemaName = (schema: Schema.Schema.Any): string => {
  // a Schema.Class is a Transformation whose identifier sits on its type side
  const ast = SchemaAST.typeAST(schema.ast)
  return Option.getOrElse(
    Option.orElse(SchemaAST.getIdentifierAnnotation(ast), () => SchemaAST.getTitleAnnotation(ast)),
    () => "its schema"
  )
}

/**
 * A decoder for one schema, built once: `value` decodes an already-parsed JSON value (tolerantly: extra
 * fields pass), `text` parses first. Failures are bounded, redacted `DecodeError`s. Synchronous, because a
 * stream decodes one per chunk.
 */
export const decoder = <A, I>(schema: Schema.Schema<A, I>, endpoint: string, redact: (text: string) => string) => {
  const { decode, name } = compiledOf(schema)
  const failure = (message: string, text: string, info: ResponseMetadata) =>
    new DecodeError({
      message: excerpt(redact(message), 1024),
      endpoint,
      status: info.status,
      ...(info.requestId === undefined ? {} : { requestId: info.requestId }),
      excerpt: excerpt(redact(text))
    })
  const value = (json: unknown, text: string, info: ResponseMetadata): Either.Either<A, DecodeError> => {
    try {
      return Either.mapLeft(
        decode(json),
        (error) =>
          failure(`response did not match ${name}: ${ParseResult.TreeFormatter.formatErrorSync(error)}`, text, info)
      )
    } catch {
      // a value nested thousands deep overflows the stack of the decoder or of the error formatter
      return Either.left(failure(`response did not match ${name}: nested too deeply to check`, text, info))
    }
  }
  const parse = (text: string, info: ResponseMetadata): Either.Either<unknown, DecodeError> => {
    try {
      return Either.right(JSON.parse(text) as unknown)
    } catch {
      return Either.left(failure("response body is not JSON", text, info))
    }
  }
  return {
    parse,
    value,
    text: (text: string, info: ResponseMetadata): Either.Either<A, DecodeError> =>
      Either.flatMap(parse(text, info), (json) => value(json, text, info))
  }
}

/** The compiled decoding function and the name of a schema, made once per schema. */
const compiled = new WeakMap<
  object,
  { readonly decode: (u: unknown) => Either.Either<unknown, ParseResult.ParseError>; readonly name: string }
>()

// decoding ignores excess properties by default: extra fields pass
const compile = <A, I>(schema: Schema.Schema<A, I>) => {
  const entry = { decode: Schema.decodeUnknownEither(schema), name: schemaName(schema) }
  compiled.set(schema, entry)
  return entry
}

const compiledOf = <A, I>(schema: Schema.Schema<A, I>) =>
  (compiled.get(schema) ?? compile(schema)) as {
    readonly decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>
    readonly name: string
  }

/** Parses and decodes a JSON body with `schema`. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I>,
  text: string,
  info: ResponseMetadata,
  endpoint: string,
  redact: (text: string) => string
): Effect.Effect<A, DecodeError> => decoder(schema, endpoint, redact).text(text, info)
