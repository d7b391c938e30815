/**
 * Asserts an ATH error response exactly: HTTP status, JSON content type, `{code, message, details?}` with the code
 * of the error table, a non-empty message, no stack trace, and (optionally) the expected details.
 */
import { expect } from "bun:test";
import { AthError, ATHError, ERRORS, type ErrorCode } from "../../src/protocol/index.ts";

export interface ErrorLike {
  status: number;
  headers?: Headers | Record<string, string>;
  text: string;
}

/** Returns the parsed error body after checking status, code and shape; `details` is matched with toMatchObject. */
export function expectError(response: ErrorLike, code: ErrorCode, details?: Record<string, unknown>) {
  const body = parseJson(response.text);
  expect({ status: response.status, code: body?.code }).toEqual({ status: ERRORS[code].status, code });
  const contentType = response.headers instanceof Headers ? response.headers.get("content-type") : response.headers?.["content-type"];
  if (response.headers !== undefined) expect(contentType ?? "").toContain("application/json");
  if (response.headers instanceof Headers) expect(response.headers.get("x-ath-error")).toBe(code);
  const parsed = ATHError.parse(body);
  expect(parsed.message.length).toBeGreaterThan(0);
  expect(response.text).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
  if (details !== undefined) expect(parsed.details ?? {}).toMatchObject(details);
  return parsed;
}

/** The `details` of an INVALID_REQUEST must name the offending field somewhere (message or details). */
export function expectInvalidRequestNaming(response: ErrorLike, field: string) {
  const parsed = expectError(response, "INVALID_REQUEST");
  expect(`${parsed.message} ${JSON.stringify(parsed.details ?? {})}`).toContain(field);
  return parsed;
}

/** The AthError a promise rejects with (anything else fails the test). */
export async function rejection(p: Promise<unknown>): Promise<AthError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof AthError)) throw new Error(`expected an AthError, got ${String(err)}`);
  return err;
}

// internal

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`expected a JSON error body, got: ${text.slice(0, 300)}`);
  }
}
