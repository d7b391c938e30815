/**
 * The client-side error type: every failure the CLI can report, classified by what the user must do next.
 * `src/main.ts` maps the class to an exit code in one place (DESIGN.md §5).
 */
import type { ErrorDetails } from "../protocol/errors.ts";

/**
 * - `usage`: a bad flag or value (exit 2)
 * - `config`: no gateway, not registered, no or expired token (exit 3)
 * - `refused`: the gateway answered with an ATH error body (exit 4)
 * - `network`: refused, timeout, DNS, or the gateway answering 503 SERVICE_UNAVAILABLE (exit 5)
 * - `failure`: anything else, including an upstream answer ≥ 400 (exit 1)
 */
export type ErrorKind = "usage" | "config" | "refused" | "network" | "failure";

export class ClientError extends Error {
  override readonly name = "ClientError";
  readonly kind: ErrorKind;
  /** Stable machine code: an ATH error code for `refused`, else e.g. `NOT_REGISTERED`, `NETWORK_ERROR`. */
  readonly code: string;
  readonly status?: number;
  readonly details?: ErrorDetails;
  /** True when the command already wrote its JSON document to stdout (e.g. proxy with an upstream 404). */
  readonly reported: boolean;
  /** The message is several problems of the user's own files, one a line: printed line by line (each made safe). */
  readonly multiline: boolean;
  /**
   * What went wrong, without the next step for a person at a shell: `ath mcp` says its own next step in tools' terms
   * (issue 40: a tool's text mixed "run `ath authorize …`" into its advice). The message is this plus `: <next>`.
   */
  readonly reason: string;

  constructor(
    kind: ErrorKind,
    code: string,
    message: string,
    options: { status?: number; details?: ErrorDetails; cause?: unknown; reported?: boolean; multiline?: boolean; next?: string } = {},
  ) {
    super(options.next === undefined ? message : `${message}: ${options.next}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = message;
    this.kind = kind;
    this.code = code;
    if (options.status !== undefined) this.status = options.status;
    if (options.details !== undefined) this.details = options.details;
    this.reported = options.reported ?? false;
    this.multiline = options.multiline ?? false;
  }
}

/**
 * The kind of an ATH error the gateway answered with: a refusal (exit 4) — except SERVICE_UNAVAILABLE, where the
 * gateway is up but cannot record anything (its store fails): nothing was refused and nothing happened, so like an
 * unreachable gateway it is `network` (exit 5: try again later, keep what is saved).
 */
export function athErrorKind(code: string): ErrorKind {
  return code === "SERVICE_UNAVAILABLE" ? "network" : "refused";
}

/** A usage error (exit 2). */
export function usageError(message: string, details?: ErrorDetails): ClientError {
  return new ClientError("usage", "USAGE", message, details === undefined ? {} : { details });
}

/** A "not configured" error (exit 3) whose message names the next step (`next`: the shell command's clause). */
export function notConfigured(code: string, message: string, details?: ErrorDetails, next?: string): ClientError {
  return new ClientError("config", code, message, { ...(details === undefined ? {} : { details }), ...(next === undefined ? {} : { next }) });
}

/**
 * Text from a server (or a file) made safe for one line of a terminal: runs of whitespace, newlines included,
 * become one space; other control characters (C0, DEL, C1) and the bidi and line-separator controls become
 * U+FFFD, so an answer cannot move the cursor, retitle the window or forge extra lines of output.
 */
export function oneLine(s: string): string {
  return s
    .replace(/[\t\n\v\f\r \u0085\u2028\u2029]+/g, " ")
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, "\ufffd")
    .trim();
}
