/** The one bounded body reader: protocol request bodies and fetched identity documents alike stop at a limit. */
import { AthError } from "../../protocol/errors.ts";

/**
 * Reads `body` whole, refusing more than `limit` bytes: a declared Content-Length over it is refused before reading,
 * and a body without one (chunked) is cancelled at the first chunk that crosses it — never buffered past it.
 */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  declaredLength: string | null,
  limit: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  if (declaredLength !== null && Number(declaredLength) > limit) {
    await body?.cancel();
    throw tooLarge();
  }
  if (body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (let r = await readOrGone(reader); !r.done; r = await readOrGone(reader)) {
    size += r.value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(r.value);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * A request's body whole, bounded as `readBounded` bounds it. A body of declared length is taken as the server buffered
 * it, without asking for `req.body`: Bun makes a server request's body a stream the moment it is asked for, and reading
 * that stream whole costs more (≈ 10 µs per 1 KiB POST on the proxy, issue 41). The server holds the client to the
 * length it declared. `declaredLength`: the request's Content-Length as sent (a door may have read it before its headers
 * were changed).
 */
export function readRequestBounded(req: Request, declaredLength: string | null, limit: number, tooLarge: () => Error): Promise<Uint8Array>;
/** …and `as` the caller wants it, made in the read's own reaction. */
export function readRequestBounded<T>(req: Request, declaredLength: string | null, limit: number, tooLarge: () => Error, as: (bytes: Uint8Array) => T): Promise<T>;
export function readRequestBounded<T>(req: Request, declaredLength: string | null, limit: number, tooLarge: () => Error, as?: (bytes: Uint8Array) => T): Promise<T | Uint8Array> {
  const n = declaredLength === null ? NaN : Number(declaredLength);
  // Not an async function: the server's own read is the one promise a caller awaits, through one reaction that also
  // makes what the caller wants of the bytes (issue 41: each promise hop on a call's way costs).
  if (Number.isSafeInteger(n) && n > 0 && n <= limit) return req.bytes().then(as, rejectClientGone);
  const read = readOtherwise(req, declaredLength, n, limit, tooLarge);
  return as === undefined ? read : read.then(as);
}

/**
 * A client that hangs up before its body is complete is not the gateway's failure (issue 35 #14): Bun rejects the read
 * with an AbortError ("The connection was closed"), which would otherwise reach the boundary as an internal error —
 * logged as a 500 that anyone can cause at will. It becomes a 400 nobody receives; the access record says what it was.
 */
export function clientGone(err: unknown): unknown {
  if (err instanceof DOMException && err.name === "AbortError") {
    return new AthError("INVALID_REQUEST", "The client closed the connection before its request body was complete", { reason: "client_closed" });
  }
  return err;
}

// internal

async function readOtherwise(req: Request, declaredLength: string | null, n: number, limit: number, tooLarge: () => Error): Promise<Uint8Array> {
  if (n > limit) {
    await req.body?.cancel();
    throw tooLarge();
  }
  // (Bun gives a request declaring Content-Length: 0 no body)
  if (n === 0) return new Uint8Array(0);
  return readBounded(req.body, declaredLength, limit, tooLarge);
}

function rejectClientGone(err: unknown): never {
  throw clientGone(err);
}

async function readOrGone(reader: ReadableStreamDefaultReader<Uint8Array>): ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]> {
  try {
    return await reader.read();
  } catch (err) {
    throw clientGone(err);
  }
}
