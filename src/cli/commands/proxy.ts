/**
 * `ath proxy <provider> <method> <path>`: call the provider API through the gateway with the saved token (in
 * native mode: the service's api_base directly). Like `gh api`: the body goes to stdout even for status ≥ 400
 * (text: its bytes unchanged, streamed as they arrive; json: `{status, headers, body}`), then `ath: HTTP 404` on
 * stderr and exit 1 (exit 4 when the gateway itself refused: X-ATH-Error). `-H` names are case-insensitive and
 * cannot replace the two headers ath sets (Authorization, X-ATH-Agent-ID); no Accept is sent unless `-H` gives one.
 *
 * A request a person must approve (DESIGN §15, 403 APPROVAL_REQUIRED): the approval URL is said on stderr and the
 * command exits 4 (`--format json`: the answer's document with `approval`, the pending approval); `--approval ID`
 * resends it once approved. `--wait-approval` does it in one go: opens the URL, polls with a spinner until the
 * person decided, then resends the same request with `X-ATH-Approval` (denied or expired: exit 4).
 */
import { prettyJson } from "../kit/pretty-json.ts";
import { forTerminal as sanitized, jsonInert } from "../../text/sanitize.ts";
import { HEADER_NAME, HEADER_VALUE, PROXY_METHODS } from "../../protocol/constants.ts";
import { didYouMean } from "../../text/suggest.ts";
import { requestWithApproval, type ApprovalWait } from "../../agent/flows/approval.ts";
import { opensElsewhere } from "../../agent/links.ts";
import { OWN_HEADERS, parseMaybeJson, utf8, type RequestInput } from "../../agent/flows/request.ts";
import { isApprovalId } from "../../protocol/lean.ts";
import { spinner } from "../kit/spinner.ts";
import { commonOptions, context, type CommonOptions } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { athErrorKind, ClientError, oneLine, usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand, invocation } from "../kit/flags.ts";
import { fileProblem } from "../../text/file-errors.ts";

export interface ProxyOptions extends CommonOptions {
  /** Positional words: provider method path, or method path in native mode. */
  words: string[];
  body?: string;
  headers: string[];
  /** Open the approval URL, wait for the person's decision, resend (DESIGN §15). */
  waitApproval: boolean;
  /** Resend with this approval (`X-ATH-Approval`). */
  approval?: string;
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
  if (opts.approval !== undefined && !isApprovalId(opts.approval)) throw usageError(`--approval must be an approval id (ath_apr_…), got "${oneLine(opts.approval)}"`);
  // On a terminal a person reads the answer: JSON pretty-printed, and a final newline (gh api does the same).
  const forPerson = !ctx.out.json && deps.stdoutTTY;
  // Piped text: as received, chunk by chunk — binary-safe, no newline added, never all in memory (`ath proxy … > file`).
  // Not while an approval may be awaited: the refusal must not reach stdout before the real answer.
  const streamed = !ctx.out.json && !forPerson;
  const input: RequestInput = {
    target, method, path, headers,
    ...(provider === undefined ? {} : { provider }),
    ...(body === undefined ? {} : { body }),
    ...(streamed ? { onChunk: (chunk: Uint8Array) => deps.stdout(chunk) } : {}),
  };
  const { result: r, pending } = await requestWithApproval(input, ctx.agent, {
    ...(opts.approval === undefined ? {} : { approval: opts.approval }),
    ...(opts.waitApproval ? { wait: waitForPerson(ctx, input) } : {}),
  });
  // A refusal of ATH itself is one line on stderr below (its document only with --format json), never stdout.
  if (forPerson && r.refusal === undefined) deps.stdout(forTerminal(r.body));
  if (ctx.out.json) {
    const text = utf8(r.body);
    const body = text === undefined ? { body: r.body.toBase64(), body_encoding: "base64" } : { body: parseMaybeJson(text) };
    ctx.out.doc({ status: r.status, headers: Object.fromEntries(r.headers), ...body, ...(pending ? { approval: { ...pending, status: "pending" } } : {}) });
  }
  if (pending !== undefined) {
    const who = pending.approver === "admin" ? "an admin of the gateway (its console, Approvals)" : "the person who gave consent, in that browser,";
    throw new ClientError(
      "refused",
      "APPROVAL_REQUIRED",
      `${method} ${path} needs a person's approval: ${who} must open ${pending.approval_url} before ${pending.expires_at}; then run the same command with --approval ${pending.approval_id} (or use --wait-approval)`,
      { status: r.status, reported: true },
    );
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

/** `--wait-approval` on a terminal: say the URL, open it, a spinner (on a TTY) until the person decided. */
function waitForPerson(ctx: Awaited<ReturnType<typeof context>>, input: RequestInput): ApprovalWait {
  const { out, deps } = ctx;
  let spin: ReturnType<typeof spinner> | undefined;
  return {
    intervalMs: pollInterval(deps.env),
    async ask(pending) {
      const until = Date.parse(pending.expires_at);
      const elsewhere = opensElsewhere(pending.approval_url, input.target.base);
      out.info(`${input.method} ${input.path} needs a person's approval${pending.approver === "admin" ? " (an admin of the gateway decides it)" : ""}. Open this URL${elsewhere ? ` (it ${elsewhere}, not the gateway)` : ""}:\n  ${pending.approval_url}`);
      if (out.json) deps.stderr(`${JSON.stringify({ approval_id: pending.approval_id, approval_url: pending.approval_url, expires_at: pending.expires_at })}\n`);
      spin = deps.stderrTTY && !out.json ? spinner(() => `waiting for the approval… ${timeLeft(until - deps.now())} left`, deps.stderr) : undefined;
      deps.openUrl(pending.approval_url).catch((e: unknown) => {
        if (spin) deps.stderr("\r\u001b[2K");
        out.info(`could not open a browser (${(e as Error).message}). Open the URL yourself.`);
      });
      return true;
    },
    settled: () => spin?.stop(),
  };
}

/** `ATH_APPROVAL_POLL_MS` (tests, impatient people), else once a second. */
function pollInterval(env: Record<string, string | undefined>): number {
  const ms = Number(env.ATH_APPROVAL_POLL_MS);
  return Number.isInteger(ms) && ms >= 50 && ms <= 60_000 ? ms : 1000;
}

function timeLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** `--body` as given: inline text, `@path` a file's contents, `-` all of stdin. */
async function readBodyArg(arg: string, deps: Deps): Promise<string> {
  if (arg === "-") return deps.readStdin();
  if (!arg.startsWith("@")) return arg;
  const path = arg.slice(1);
  try {
    const { readFile } = await import("node:fs/promises");
    return await readFile(path, "utf8");
  } catch (e) {
    throw usageError(`--body ${oneLine(arg)}: cannot read ${oneLine(path)}: ${fileProblem(e)}`);
  }
}

/**
 * A body for a person's terminal: JSON pretty-printed (inert escapes), other text with a final newline — sanitized
 * either way, binary decoded lossily and sanitized too (DESIGN §14: a body is data; piped, it goes out as received).
 */
function forTerminal(bytes: Uint8Array): string {
  const text = utf8(bytes);
  if (text === undefined) return sanitized(new TextDecoder().decode(bytes)) + "\n";
  const value = parseMaybeJson(text);
  // bounded re-indenting (≤ 64 KiB, depth ≤ 32, else as received), inert escapes, then sanitized
  if (typeof value === "object" && value !== null) return `${sanitized(jsonInert(prettyJson(text)))}\n`;
  const safe = sanitized(text);
  return safe === "" || safe.endsWith("\n") ? safe : `${safe}\n`;
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
  "wait-approval": { type: "boolean", description: "If a person must approve the request: open the approval page, wait for the decision, resend" },
  approval: { type: "string", description: "Resend a request a person approved (its approval id, ath_apr_…)", valueHint: "id" },
} as const;

export default defineCommand({
  meta: { name: "proxy", description: "Call the provider API with the saved token" },
  args,
  run: ({ args: a, data }) => {
    const words = [a.provider, a.method, a.path].filter((w): w is string => typeof w === "string");
    const o: ProxyOptions = { ...commonOptions(data), words, headers: invocation(data).values("header"), waitApproval: a["wait-approval"] === true };
    if (typeof a.body === "string") o.body = a.body;
    if (typeof a.approval === "string") o.approval = a.approval;
    return run(o, getDeps());
  },
});
