/** Reading a Cookie request header (RFC 6265 §5.4), no decoding beyond trimming. */

/** `a=1; b=2` → Map { a → "1", b → "2" } (a repeated name keeps its last value). */
export function parseCookies(header: string | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? "").split(";")) {
    const i = part.indexOf("=");
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}
