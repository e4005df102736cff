/**
 * The client's errors as the `AiError` that `@effect/ai` expects, each keeping the client's error as its cause.
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import type { ApiError } from "../../schemas/Errors.js"

/**
 * An `ApiError` as an `AiError`: an answer that could not be read is `MalformedOutput`, anything else
 * `UnknownError` with the error's tag and message; the `ApiError` itself is the `cause` either way.
 */
export const toAiError = (module: string, method: string) => (error: ApiError): AiError.AiError =>
  error._tag === "DecodeError"
    ? new AiError.MalformedOutput({ module, method, description: error.message, cause: error })
    : new AiError.UnknownError({ module, method, description: `${error._tag}: ${error.message}`, cause: error })
