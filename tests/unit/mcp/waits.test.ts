/** mcp/waits.ts: the background authorizations of `ath mcp` — one per provider, replaced, found, cancelled, closed. */
import { describe, expect, test } from "bun:test";
import { ClientError } from "../../../src/agent/errors.ts";
import type { Exchanged } from "../../../src/agent/flows/exchange.ts";
import { settleWithin, Waits, type Run, type Started } from "../../../src/mcp/waits.ts";

const started = (provider: string, session: string): Started => ({
  gateway: "http://gw",
  agent_id: "did:key:z1",
  provider_id: provider,
  scopes: ["a"],
  authorization_url: `http://gw/ath/consent/${session}`,
  ath_session_id: session,
  user_redirect_uri: "http://127.0.0.1:1/callback",
});

/** A run that starts at once and then waits until it is cancelled (CANCELLED) or `finish` is called. */
function controllable(provider: string, session: string): { run: Run; finish: (r: Exchanged) => void; cancelled: () => boolean } {
  let finish!: (r: Exchanged) => void;
  let cancelled = false;
  const run: Run = (signal, onStarted) =>
    new Promise<Exchanged>((resolve, reject) => {
      finish = resolve;
      onStarted(started(provider, session));
      signal.addEventListener("abort", () => {
        cancelled = true;
        reject(new ClientError("failure", "CANCELLED", "cancelled"));
      });
    });
  return { run, finish: (r) => finish(r), cancelled: () => cancelled };
}

describe("Waits", () => {
  test("a new wait for the same provider cancels the one running; find names a provider, or takes the only one", async () => {
    const waits = new Waits();
    const first = controllable("mail", "ath_sess_1");
    const a = waits.start("mail", first.run);
    expect((await a.started).ath_session_id).toBe("ath_sess_1");
    expect(waits.find()).toBe(a);
    const b = waits.start("mail", controllable("mail", "ath_sess_2").run);
    expect(first.cancelled()).toBe(true);
    expect(await settleWithin(a, 1000)).toBe("done");
    expect(a.settled).toEqual({ error: expect.objectContaining({ code: "CANCELLED" }) });
    expect(waits.find("mail")).toBe(b);
    waits.start("calendar", controllable("calendar", "ath_sess_3").run);
    expect(waits.find()).toBeUndefined(); // two running: none is "the only one"
    expect(waits.find("calendar")?.info?.ath_session_id).toBe("ath_sess_3");
    await waits.closeAll();
    expect(waits.find("mail")).toBeUndefined();
  });

  test("a failure before the start rejects `started`; nobody asking is not an unhandled rejection", async () => {
    const waits = new Waits();
    const w = waits.start("mail", () => Promise.reject(new ClientError("refused", "PROVIDER_NOT_APPROVED", "no")));
    await expect(w.started).rejects.toMatchObject({ code: "PROVIDER_NOT_APPROVED" });
    waits.forget(w);
    expect(waits.find("mail")).toBeUndefined();
    waits.start("other", () => Promise.reject(new Error("ignored")));
    await Bun.sleep(5);
  });

  test("settleWithin: done when the outcome arrives, timeout when it does not, aborted when the call is cancelled", async () => {
    const waits = new Waits();
    const c = controllable("mail", "ath_sess_1");
    const w = waits.start("mail", c.run);
    expect(await settleWithin(w, 10)).toBe("timeout");
    const call = new AbortController();
    const pending = settleWithin(w, 10_000, call.signal);
    call.abort();
    expect(await pending).toBe("aborted");
    const exchanged = { already_exchanged: false } as Exchanged;
    const done = settleWithin(w, 10_000);
    c.finish(exchanged);
    expect(await done).toBe("done");
    expect(w.settled).toEqual({ ok: exchanged });
  });
});
