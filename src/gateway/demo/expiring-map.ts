/**
 * The sandbox's only storage: a Map whose entries expire and whose size is bounded. Expired entries are
 * swept when the map fills; if it is still full, the oldest entry is evicted, so memory stays bounded whatever
 * callers do.
 */
export class ExpiringMap<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(private readonly maxEntries: number) {
    if (!(maxEntries > 0)) throw new TypeError("maxEntries must be positive");
  }

  get size(): number {
    return this.#entries.size;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key); // re-insert at the end: eviction order is age
    if (this.#entries.size >= this.maxEntries) this.sweep();
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, expiresAt: Date.now() + ttlMs });
  }

  get(key: string): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Get and delete in one step: JS runs it without interleaving, so a value is taken at most once. */
  take(key: string): V | undefined {
    const value = this.get(key);
    this.#entries.delete(key);
    return value;
  }

  delete(key: string): boolean {
    return this.#entries.delete(key);
  }

  /** Deletes every live entry the predicate selects; returns how many. */
  deleteWhere(pred: (value: V) => boolean): number {
    let n = 0;
    for (const [key, e] of this.#entries) if (pred(e.value) && this.#entries.delete(key)) n++;
    return n;
  }

  sweep(): void {
    const now = Date.now();
    for (const [key, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(key);
  }
}
