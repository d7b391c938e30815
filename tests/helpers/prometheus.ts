/**
 * A strict parser of the Prometheus text exposition format 0.0.4, for tests that scrape GET /metrics: every line must
 * be a HELP, a TYPE or a sample; names, label names and escapes as the format defines them; one TYPE per family,
 * before its samples, which come together; no series twice; histograms with ascending `le` buckets, cumulative counts,
 * a `+Inf` bucket equal to `_count`, and `_sum`. Anything else throws, naming the line.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

export function parseExposition(text: string): Map<string, Family> {
  if (text !== "" && !text.endsWith("\n")) throw new Error("the exposition must end with a line feed");
  const families = new Map<string, Family>();
  const seenSeries = new Set<string>();
  let current: Family | undefined;
  const lines = text.split("\n").slice(0, -1);
  lines.forEach((line, i) => {
    const at = `line ${i + 1} (${JSON.stringify(line)})`;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) throw new Error(`${at}: a comment that is neither HELP nor TYPE`);
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!METRIC_NAME.test(name)) throw new Error(`${at}: invalid metric name`);
      let family = families.get(name);
      if (family && family !== current) throw new Error(`${at}: ${name} appears twice, apart`);
      if (!family) {
        family = { name, type: "untyped", samples: [] };
        families.set(name, family);
      }
      if (family.samples.length > 0) throw new Error(`${at}: ${kind} after the samples of ${name}`);
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new Error(`${at}: unknown type`);
        if ((family as Family & { typed?: boolean }).typed) throw new Error(`${at}: a second TYPE for ${name}`);
        family.type = rest as Family["type"];
        (family as Family & { typed?: boolean }).typed = true;
      } else {
        if (family.help !== undefined) throw new Error(`${at}: a second HELP for ${name}`);
        family.help = unescapeHelp(rest, at);
      }
      current = family;
      return;
    }
    if (line.trim() === "") throw new Error(`${at}: an empty line`);
    const sample = parseSample(line, at);
    const familyName = familyOf(sample.name, families);
    const family = families.get(familyName);
    if (!family) throw new Error(`${at}: a sample of ${sample.name} without TYPE`);
    if (family !== current) throw new Error(`${at}: samples of ${familyName} are not together`);
    if (family.type === "histogram" && !/_(bucket|sum|count)$/.test(sample.name)) throw new Error(`${at}: a histogram sample must be _bucket, _sum or _count`);
    if (family.type !== "histogram" && family.type !== "summary" && sample.name !== familyName) throw new Error(`${at}: ${sample.name} in family ${familyName}`);
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seenSeries.has(key)) throw new Error(`${at}: a series given twice`);
    seenSeries.add(key);
    family.samples.push(sample);
  });
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}

/** The value of the one sample of `name` whose labels include `labels` (0 when there is none). */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ""));
  const matching = (family?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matching.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${matching.length} series`);
  return matching[0]?.value ?? 0;
}

// internal

function familyOf(sampleName: string, families: Map<string, Family>): string {
  if (families.has(sampleName) && families.get(sampleName)!.type !== "histogram") return sampleName;
  const base = sampleName.replace(/_(bucket|sum|count)$/, "");
  return families.has(base) ? base : sampleName;
}

function parseSample(line: string, at: string): Sample {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$/.exec(line);
  if (!m) throw new Error(`${at}: not a sample line`);
  const [, name, rawLabels, rawValue] = m as unknown as [string, string, string | undefined, string];
  return { name, labels: rawLabels ? parseLabels(rawLabels, at) : {}, value: parseValue(rawValue, at) };
}

function parseLabels(raw: string, at: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 1;
  while (i < raw.length - 1) {
    const eq = raw.indexOf("=", i);
    if (eq < 0) throw new Error(`${at}: a label without =`);
    const name = raw.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`${at}: invalid label name ${JSON.stringify(name)}`);
    if (raw[eq + 1] !== '"') throw new Error(`${at}: a label value must be quoted`);
    let value = "";
    let j = eq + 2;
    for (;; j++) {
      if (j >= raw.length - 1) throw new Error(`${at}: an unterminated label value`);
      const c = raw[j]!;
      if (c === "\\") {
        const next = raw[++j];
        if (next === "\\") value += "\\";
        else if (next === '"') value += '"';
        else if (next === "n") value += "\n";
        else throw new Error(`${at}: an invalid escape \\${next}`);
      } else if (c === '"') break;
      else if (c === "\n") throw new Error(`${at}: a raw line feed in a label value`);
      else value += c;
    }
    if (Object.hasOwn(labels, name)) throw new Error(`${at}: label ${name} twice`);
    labels[name] = value;
    i = j + 1;
    if (raw[i] === ",") i++;
    else if (i !== raw.length - 1) throw new Error(`${at}: labels must be separated by commas`);
  }
  return labels;
}

function parseValue(raw: string, at: string): number {
  if (raw === "+Inf") return Infinity;
  if (raw === "-Inf") return -Infinity;
  if (raw === "NaN") return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw new Error(`${at}: invalid value ${raw}`);
  return Number(raw);
}

function unescapeHelp(raw: string, at: string): string {
  return raw.replace(/\\(.)/g, (_, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    throw new Error(`${at}: an invalid escape in HELP`);
  });
}

function checkHistogram(f: Family): void {
  const series = new Map<string, { buckets: { le: number; v: number }[]; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name.endsWith("_bucket")) {
      if (le === undefined) throw new Error(`${f.name}: a bucket without le`);
      entry.buckets.push({ le: parseValue(le, f.name), v: s.value });
    } else if (s.name.endsWith("_sum")) entry.sum = s.value;
    else entry.count = s.value;
  }
  for (const [key, e] of series) {
    const at = `${f.name}${key}`;
    if (e.sum === undefined || e.count === undefined) throw new Error(`${at}: _sum or _count missing`);
    const last = e.buckets.at(-1);
    if (!last || last.le !== Infinity) throw new Error(`${at}: no +Inf bucket last`);
    if (last.v !== e.count) throw new Error(`${at}: +Inf bucket ${last.v} ≠ _count ${e.count}`);
    for (let i = 1; i < e.buckets.length; i++) {
      if (!(e.buckets[i]!.le > e.buckets[i - 1]!.le)) throw new Error(`${at}: le not ascending`);
      if (e.buckets[i]!.v < e.buckets[i - 1]!.v) throw new Error(`${at}: buckets not cumulative`);
    }
  }
}
