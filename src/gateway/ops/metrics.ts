/**
 * The metrics registry (DESIGN §10): counters and histograms kept in plain Maps keyed by their label values — an
 * increment on the proxy's path is one string join and one Map update — rendered on demand in the Prometheus text
 * format 0.0.4. Label values come from bounded sets only (route templates, methods, statuses, configured providers,
 * limit names): never a raw path or anything a client can vary at will.
 */
import type { LogFields, Metrics } from "../context.ts";

export class Counter {
  private readonly values = new Map<string, CounterSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  inc(labels: readonly string[], by = 1): void {
    this.series(labels).inc(by);
  }

  /** The series of `labels`, to keep and increment without looking it up again (the pipeline's per route and status). */
  series(labels: readonly string[]): CounterSeries {
    const key = labels.join("\u0000");
    let v = this.values.get(key);
    if (v === undefined) this.values.set(key, (v = new CounterSeries(labels)));
    return v;
  }

  /** The current value (0 when never incremented), for tests. */
  get(labels: readonly string[]): number {
    return this.values.get(labels.join("\u0000"))?.value ?? 0;
  }

  render(): string {
    let out = header(this.name, this.help, "counter");
    for (const v of this.values.values()) out += `${this.name}${labelSet(this.labelNames, v.labels)} ${v.value}\n`;
    return out;
  }
}

/** Upper bounds in seconds: 1 ms to 30 s (the upstream timeout's default). */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Histogram {
  private readonly all = new Map<string, HistogramSeries>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[] = DURATION_BUCKETS,
  ) {}

  observe(labels: readonly string[], value: number): void {
    this.series(labels).observe(value);
  }

  /** The series of `labels`, to keep and observe into without looking it up again. */
  series(labels: readonly string[]): HistogramSeries {
    const key = labels.join("\u0000");
    let s = this.all.get(key);
    if (s === undefined) this.all.set(key, (s = new HistogramSeries(labels, this.buckets)));
    return s;
  }

  render(): string {
    let out = header(this.name, this.help, "histogram");
    for (const s of this.all.values()) {
      let cumulated = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulated += s.counts[i]!;
        out += `${this.name}_bucket${labelSet([...this.labelNames, "le"], [...s.labels, String(this.buckets[i])])} ${cumulated}\n`;
      }
      out += `${this.name}_bucket${labelSet([...this.labelNames, "le"], [...s.labels, "+Inf"])} ${s.count}\n`;
      out += `${this.name}_sum${labelSet(this.labelNames, s.labels)} ${s.sum}\n`;
      out += `${this.name}_count${labelSet(this.labelNames, s.labels)} ${s.count}\n`;
    }
    return out;
  }
}

/** One counter's series: its label values and its count. */
export class CounterSeries {
  value = 0;
  constructor(readonly labels: readonly string[]) {}
  inc(by = 1): void {
    this.value += by;
  }
}

/** One histogram's series: its label values, its observations per bucket, their sum and count. */
export class HistogramSeries {
  /** counts[i]: observations in (buckets[i-1], buckets[i]]; cumulated when rendered. */
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(
    readonly labels: readonly string[],
    private readonly buckets: readonly number[],
  ) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }
  observe(value: number): void {
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]!) i++;
    if (i < this.buckets.length) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** One value without labels, set as it changes. */
export class Gauge {
  private value = 0;
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  set(value: number): void {
    this.value = value;
  }
  get(): number {
    return this.value;
  }
  render(): string {
    return `${header(this.name, this.help, "gauge")}${this.name} ${this.value}\n`;
  }
}

export function createMetrics(version: string): Metrics {
  const m = {
    http: new Counter("ath_http_requests_total", "HTTP requests answered, by route template, method and status.", ["route", "method", "status"]),
    httpDuration: new Histogram("ath_http_request_duration_seconds", "Time to the response headers, by route template.", ["route"]),
    proxy: new Counter("ath_proxy_requests_total", "Proxied requests, by provider and the status the agent got.", ["provider", "status"]),
    upstreamDuration: new Histogram("ath_proxy_upstream_duration_seconds", "Time to the provider API's response headers.", ["provider"]),
    tokensIssued: new Counter("ath_tokens_issued_total", "ATH tokens issued.", ["provider"]),
    tokensRevoked: new Counter("ath_tokens_revoked_total", "ATH tokens revoked (by their client at /ath/revoke, or by an admin).", ["provider"]),
    upstreamRefresh: new Counter("ath_upstream_refresh_total", "Upstream token refreshes, by result (ok, refused, failed).", ["provider", "result"]),
    agentsRegistered: new Counter("ath_agents_registered_total", "Agents registered, by the status they got.", ["status"]),
    refresh: new Counter("ath_token_refresh_total", "Refresh-token grants (DESIGN §17), by result (rotated, reuse_detected).", ["provider", "result"]),
    rateLimited: new Counter("ath_rate_limited_total", "Requests refused with 429, by limit.", ["limit"]),
    approvals: new Counter("ath_approvals_total", "Per-request approvals, by provider and what happened (requested, approved, denied, used).", ["provider", "result"]),
    budgetExhausted: new Counter("ath_budget_exhausted_total", "Calls that found their budget spent (denied 429, or held for a person).", ["provider"]),
    mcpCalls: new Counter("ath_mcp_calls_total", "MCP JSON-RPC calls through the front door, by provider, method, tool and result.", ["provider", "method", "tool", "result"]),
    webhookDeliveries: new Counter("ath_webhook_deliveries_total", "Webhook delivery attempts, by result (ok, error).", ["result"]),
    auditRetries: new Counter("ath_audit_write_retries_total", "Audit batch writes the store did not take (each is kept and written again, in order).", []),
    auditPending: new Gauge("ath_audit_pending_events", "Audit events waiting for the store after a failed write (0 while it takes them)."),
    auditTamper: new Counter("ath_audit_tamper_detected_total", "Times the audit chain in the store was found rewritten (then nothing is signed until an operator acts).", []),
  };
  const provider = (e: { provider_id?: string | null | undefined }) => e.provider_id ?? "none";
  const EVENTS: Record<string, (e: { provider_id?: string | null | undefined; data?: LogFields | undefined }) => void> = {
    "token.issued": (e) => m.tokensIssued.inc([provider(e)]),
    "token.revoked": (e) => m.tokensRevoked.inc([provider(e)]),
    "token.refreshed": (e) => m.refresh.inc([provider(e), "rotated"]),
    "refresh.reuse_detected": (e) => m.refresh.inc([provider(e), "reuse_detected"]),
    "upstream.refreshed": (e) => m.upstreamRefresh.inc([provider(e), "ok"]),
    "upstream.refresh_refused": (e) => m.upstreamRefresh.inc([provider(e), "refused"]),
    "upstream.refresh_failed": (e) => m.upstreamRefresh.inc([provider(e), "failed"]),
    "approval.requested": (e) => m.approvals.inc([provider(e), "requested"]),
    "approval.approved": (e) => m.approvals.inc([provider(e), "approved"]),
    "approval.denied": (e) => m.approvals.inc([provider(e), "denied"]),
    "approval.used": (e) => m.approvals.inc([provider(e), "used"]),
    "budget.exhausted": (e) => m.budgetExhausted.inc([provider(e)]),
    "mcp.call": (e) => m.mcpCalls.inc([provider(e), String(e.data?.method_label ?? "other"), String(e.data?.tool_label ?? ""), String(e.data?.result ?? "unknown")]),
    "agent.registered": (e) => m.agentsRegistered.inc([String(e.data?.status ?? "unknown")]),
    "audit.tamper_detected": () => m.auditTamper.inc([]),
  };
  const build = `# HELP ath_build_info The running ath version.\n# TYPE ath_build_info gauge\nath_build_info${labelSet(["version"], [version])} 1\n`;
  return {
    ...m,
    event: (type, e) => EVENTS[type]?.(e),
    render: () =>
      build +
      Object.values(m).map((metric) => metric.render()).join("") +
      header("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge") +
      `process_resident_memory_bytes ${process.memoryUsage.rss()}\n` +
      header("process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", "gauge") +
      `process_start_time_seconds ${Math.floor(performance.timeOrigin / 1000)}\n`,
  };
}

// internal

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
}

/** `{a="x",b="y"}` with the exposition format's escapes (backslash, double quote, line feed). */
function labelSet(names: readonly string[], values: readonly string[]): string {
  if (names.length === 0) return "";
  return `{${names.map((n, i) => `${n}="${values[i]!.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`).join(",")}}`;
}
