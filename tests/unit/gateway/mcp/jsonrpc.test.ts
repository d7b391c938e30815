/**
 * Reading an MCP client's POST (src/gateway/mcp/jsonrpc.ts, DESIGN §18): one message or a batch, read strictly; each
 * request the call policy judges, with its arguments' bytes exactly as sent; everything unreadable a thrown
 * JSON-RPC error (400), never a guess.
 */
import { describe, expect, test } from "bun:test";
import { JsonRpcError } from "../../../../src/gateway/http/errors.ts";
import { readMessages } from "../../../../src/gateway/mcp/jsonrpc.ts";

const bytes = (t: string) => new TextEncoder().encode(t);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("messages", () => {
  test("a request: its call, id and the bytes of its arguments as sent (spacing, key order, big numbers kept)", () => {
    const args = '{ "to" :"a@example.com","n": 12345678901234567893 }';
    const posted = readMessages(bytes(`{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"send_email","arguments":${args}}}`));
    expect(posted.batch).toBe(false);
    const [m] = posted.messages;
    expect(m!.id).toBe("x1");
    expect(m!.call).toEqual({ method: "tools/call", name: "send_email", arguments: { to: "a@example.com", n: 12345678901234567893 } });
    expect(text(m!.argumentBytes)).toBe(args);
  });

  test("a batch: each message in order; a notification has no id; a response (no method) makes no call", () => {
    const posted = readMessages(bytes('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":9,"result":{}}]'));
    expect(posted.batch).toBe(true);
    expect(posted.messages.map((m) => [m.id, m.call?.method ?? null])).toEqual([[1, "ping"], [undefined, "notifications/initialized"], [undefined, null]]);
  });

  test("no arguments: empty bytes; arguments that are not an object are kept as sent (policy fails closed on them)", () => {
    expect(readMessages(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}')).messages[0]!.argumentBytes.byteLength).toBe(0);
    const m = readMessages(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":"{\\"to\\":\\"b\\"}"}}')).messages[0]!;
    expect(m.call!.arguments).toBe('{"to":"b"}');
    expect(text(m.argumentBytes)).toBe('"{\\"to\\":\\"b\\"}"');
  });
});

describe("refused unread", () => {
  const refused = (body: Uint8Array | string) => {
    try {
      readMessages(typeof body === "string" ? bytes(body) : body);
    } catch (err) {
      expect(err).toBeInstanceOf(JsonRpcError);
      const e = err as JsonRpcError;
      return { status: e.status, code: e.code, id: e.id };
    }
    throw new Error("read");
  };

  test("not JSON, not one text, a duplicate key anywhere, not UTF-8: -32700 (400), no id", () => {
    for (const body of ["{not json", '{"jsonrpc":"2.0","id":1,"method":"ping"} {}', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}', '{"id":1,"id":2,"method":"ping"}']) {
      expect(refused(body)).toEqual({ status: 400, code: -32700, id: null });
    }
    expect(refused(new Uint8Array([0x7b, 0xff, 0x7d]))).toEqual({ status: 400, code: -32700, id: null });
  });

  test("an empty batch, a batch of non-objects, a bare value: -32600 (400)", () => {
    for (const body of ["[]", "[1]", "null", "42", '"x"', "[[]]"]) expect(refused(body)).toEqual({ status: 400, code: -32600, id: null });
  });
});
