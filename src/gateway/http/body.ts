/** The one bounded body reader: protocol request bodies and fetched identity documents alike stop at a limit. */

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
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    size += r.value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(r.value);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}
