/**
 * The loopback receiver of `authorize --wait` (RFC 8252 §7.3, §8.9): it listens on 127.0.0.1 only, refuses a
 * redirect whose `state` is not the one sent (without ending the wait), and answers nothing once the wait is over.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { startLoopback, type LoopbackReceiver } from "../../../src/agent/loopback.ts";

const STATE = "s".repeat(43);
let receiver: LoopbackReceiver | undefined;
afterEach(() => receiver?.stop());

function start(): LoopbackReceiver {
  receiver = startLoopback(STATE, { timeoutMs: 60_000 });
  return receiver;
}

describe("authorize --wait loopback receiver", () => {
  test("the redirect URI is http://127.0.0.1:<port>/callback and nothing answers on another loopback address", async () => {
    const r = start();
    const url = new URL(r.redirectUri);
    expect(url.hostname).toBe("127.0.0.1");
    expect(url.pathname).toBe("/callback");
    await expect(fetch(`http://127.0.0.2:${url.port}/callback?code=x&state=${STATE}`)).rejects.toThrow();
  });

  test("a forged redirect with a wrong or missing state is refused (400) and the wait goes on", async () => {
    const r = start();
    for (const q of ["code=forged&state=wrong", "code=forged", "error=access_denied", `error=access_denied&state=${STATE}x`]) {
      const res = await fetch(`${r.redirectUri}?${q}`);
      expect(res.status).toBe(400);
    }
    // The wait was not ended by them: the real redirect still completes it.
    const ok = await fetch(`${r.redirectUri}?code=ath_code_1&state=${STATE}&ath_session_id=ath_sess_1`);
    expect(ok.status).toBe(200);
    expect(await r.result).toEqual({ code: "ath_code_1", sessionId: "ath_sess_1" });
  });

  test("a denial with the right state ends the wait as USER_DENIED; later redirects find nothing (404)", async () => {
    const r = start();
    await fetch(`${r.redirectUri}?error=access_denied&state=${STATE}`);
    await expect(r.result).rejects.toMatchObject({ code: "USER_DENIED", kind: "refused" });
    const late = await fetch(`${r.redirectUri}?code=ath_code_2&state=${STATE}`);
    expect(late.status).toBe(404);
  });

  test("a path other than /callback is 404 and does not end the wait", async () => {
    const r = start();
    const res = await fetch(r.redirectUri.replace("/callback", `/other?code=x&state=${STATE}`));
    expect(res.status).toBe(404);
    await fetch(`${r.redirectUri}?code=ath_code_3&state=${STATE}`);
    expect(await r.result).toEqual({ code: "ath_code_3" });
  });
});
