/**
 * A bridged answer decided late (DESIGN §21): a single JSON body — its status chosen at the end, so a refusal found
 * midway can still be an HTTP 400 — until something must reach the client before the result (progress, a request of
 * the server's); then an event stream the result ends.
 */
import { event } from "./sse.ts";

export class LazyAnswer {
  readonly response: Promise<Response>;
  done = false;
  private resolve!: (r: Response) => void;
  private reject!: (e: unknown) => void;
  private stream: ReadableStreamDefaultController<Uint8Array> | null = null;
  private readonly encoder = new TextEncoder();
  private readonly headers: Record<string, string>;
  private readonly onCancel: (() => void) | undefined;

  /** `headers`: set on the answer either way (a session id); `onCancel`: the client hung up on the stream. */
  constructor(headers: Record<string, string> = {}, onCancel?: () => void) {
    this.headers = headers;
    this.onCancel = onCancel;
    this.response = new Promise((resolve, reject) => ((this.resolve = resolve), (this.reject = reject)));
  }

  /** Whether the answer is already a stream. */
  get streaming(): boolean {
    return this.stream !== null;
  }

  emit(msg: unknown): void {
    if (this.done) return;
    if (this.stream === null) {
      const body = new ReadableStream<Uint8Array>({
        start: (c) => void (this.stream = c),
        cancel: () => {
          this.done = true;
          this.onCancel?.();
        },
      });
      this.resolve(new Response(body, { headers: { ...this.headers, "content-type": "text/event-stream", "cache-control": "no-store" } }));
    }
    this.stream!.enqueue(this.encoder.encode(event(msg)));
  }

  finish(msg: unknown, status = 200): void {
    if (this.done) return;
    if (this.stream === null) {
      this.done = true;
      return this.resolve(Response.json(msg, { status, headers: this.headers }));
    }
    this.emit(msg);
    this.done = true;
    this.stream.close();
  }

  fail(err: unknown): void {
    if (this.done) return;
    this.done = true;
    if (this.stream === null) this.reject(err);
    else this.stream.error(err);
  }
}
