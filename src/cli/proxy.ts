/**
 * `ath proxy <provider> <method> <path>`: call the provider API through the gateway with the saved token (in
 * native mode: the service's api_base directly). Like `gh api`: the body goes to stdout even for status ≥ 400
 * (text: its bytes unchanged, streamed as they arrive; json: `{status, headers, body}`), then `ath: HTTP 404` on
 * stderr and exit 1 (exit 4 when the gateway itself refused: X-ATH-Error). `-H` names are case-insensitive and
 * cannot replace the two headers ath sets (Authorization, X-ATH-Agent-ID); no Accept is sent unless `-H` gives one.
 */
import { HEADER_NAME, HEADER_VALUE, PROXY_METHODS } from "../protocol/constants.ts";
import { didYouMean } from "../protocol/suggest.ts";
import { OWN_HEADERS, parseMaybeJson, request, utf8 } from "../agent/flows/request.ts";
import { commonOptions, context, type CommonOptions } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";
import { athErrorKind, ClientError, oneLine, usageError } from "./errors.ts";
import { allValues, commonArgs, defineCommand } from "./flags.ts";

export interface ProxyOptions extends CommonOptions {
  /** Positional words: provider method path, or method path in native mode. */
  words: string[];
  body?: string;
  headers: string[];
}

export async function run(opts: ProxyOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const target = ctx.target();
  // Native mode may leave out the provider: the service's app stands in for it.
  const [provider, rawMethod, path] = target.native && opts.words.length === 2 ? [undefined, ...opts.words] : opts.words;
  if ((provider === undefined && !target.native) || rawMethod === undefined || path === undefined) throw usageError("usage: ath proxy <provider> <method> <path>");
  const method = rawMethod.toUpperCase();
  // Bun's fetch would send an unknown method as GET: `ath proxy demo GTE /notes` must not read the notes.
  if (!PROXY_METHODS.includes(method)) {
    throw usageError(`unknown HTTP method "${oneLine(rawMethod)}"${didYouMean(method, PROXY_METHODS)}; the proxy forwards ${PROXY_METHODS.join(", ")}`);
  }
  const headers = parseHeaders(opts.headers);
  const body = opts.body === undefined ? undefined : await readBodyArg(opts.body, deps);
  if (body !== undefined) {
    // RFC 9110 §9.3.1-2: a body on GET/HEAD has no defined meaning, and fetch refuses to send one.
    if (method === "GET" || method === "HEAD") throw usageError(`--body cannot be sent with ${method}: use POST, PUT or PATCH, or put the parameters in the path's query`);
    if (headers["content-type"] === undefined) {
      try {
        JSON.parse(body);
      } catch {
        throw usageError("--body must be valid JSON, or give its type with -H 'Content-Type: …'");
      }
      headers["content-type"] = "application/json";
    }
  }
  // On a terminal a person reads the answer: JSON pretty-printed, and a final newline (gh api does the same).
  const forPerson = !ctx.out.json && deps.stdoutTTY;
  const r = await request(
    {
      target,
      provider,
      method,
      path,
      headers,
      body,
      // Piped text: as received, chunk by chunk — binary-safe, no newline added, never all in memory (`ath proxy … > file`).
      ...(ctx.out.json || forPerson ? {} : { onChunk: (chunk: Uint8Array) => deps.stdout(chunk) }),
    },
    ctx.agent,
  );
  if (forPerson) deps.stdout(forTerminal(r.body));
  if (ctx.out.json) {
    const text = utf8(r.body);
    const body = text === undefined ? { body: r.body.toBase64(), body_encoding: "base64" } : { body: parseMaybeJson(text) };
    ctx.out.doc({ status: r.status, headers: Object.fromEntries(r.headers), ...body });
  }
  if (r.status < 400) return;
  if (r.refusal !== undefined) {
    const { code, message } = r.refusal;
    const again = code.startsWith("TOKEN_") ? `: run \`ath authorize -g ${target.base} --provider ${r.provider}\`` : "";
    throw new ClientError(athErrorKind(code), code, `${method} ${r.url}: ${r.status} ${oneLine(code)} — ${oneLine(message)}${again}`, { status: r.status, reported: true });
  }
  throw new ClientError("failure", "UPSTREAM_ERROR", `HTTP ${r.status}`, { status: r.status, reported: true });
}

// internal

/** `--body` as given: inline text, `@path` a file's contents, `-` all of stdin. */
async function readBodyArg(arg: string, deps: Deps): Promise<string> {
  if (arg === "-") return deps.readStdin();
  if (!arg.startsWith("@")) return arg;
  const path = arg.slice(1);
  try {
    const { readFile } = await import("node:fs/promises");
    return await readFile(path, "utf8");
  } catch (e) {
    throw usageError(`--body ${oneLine(arg)}: cannot read ${oneLine(path)} (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

/** A body for a person's terminal: JSON pretty-printed; other text with a final newline; binary as it is. */
function forTerminal(bytes: Uint8Array): string | Uint8Array {
  const text = utf8(bytes);
  if (text === undefined) return bytes;
  const value = parseMaybeJson(text);
  if (typeof value === "object" && value !== null) return `${JSON.stringify(value, null, 2)}\n`;
  return text === "" || text.endsWith("\n") ? text : `${text}\n`;
}

/** `-H "Name: value"` list → lower-cased names (HTTP names are case-insensitive); a repeated name joins with ", ". */
function parseHeaders(list: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const h of list) {
    const i = h.indexOf(":");
    if (i <= 0) throw usageError(`--header must be "Name: value", got "${oneLine(h)}"`);
    const name = h.slice(0, i).trim().toLowerCase();
    const value = h.slice(i + 1).trim();
    // RFC 9110 §5.1 (token) and §5.5 (field value: no CR, LF, NUL or other controls).
    if (!HEADER_NAME.test(name)) throw usageError(`--header "${oneLine(h.slice(0, i))}" is not a valid header name`);
    if (!HEADER_VALUE.test(value)) throw usageError(`--header ${name}: the value may not contain line breaks, control or non-Latin-1 characters`);
    if (OWN_HEADERS.has(name)) throw usageError(`--header ${name} cannot be given: ath sends it (the saved ATH token / the agent id)`);
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return headers;
}

const args = {
  ...commonArgs,
  provider: { type: "positional", description: "Provider id (native mode: may be omitted)", required: true },
  method: { type: "positional", description: "HTTP method", required: true },
  path: { type: "positional", description: "API path, query included (e.g. /v1/items?limit=5)", required: false },
  body: { type: "string", description: "Body for POST/PUT/PATCH: JSON, @file, or - for stdin (JSON unless -H Content-Type)", valueHint: "json|@file|-" },
  header: { type: "string", alias: "H", description: "Extra request header \"Name: value\"; repeatable", valueHint: "K:V" },
} as const;

export default defineCommand({
  meta: { name: "proxy", description: "Call the provider API with the saved token" },
  args,
  run: ({ args: a, rawArgs }) => {
    const words = [a.provider, a.method, a.path].filter((w): w is string => typeof w === "string");
    const o: ProxyOptions = { ...commonOptions(a, rawArgs), words, headers: allValues(rawArgs, args, "header") };
    if (typeof a.body === "string") o.body = a.body;
    return run(o, getDeps());
  },
});
