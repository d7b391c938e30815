/**
 * What a `when` expression is checked for at configuration beyond CEL's own parse and type check (DESIGN §16; issue
 * 35): a field its variables do not have (`request.qeury.mode` named no field, so every matching call failed its
 * evaluation and was denied — now the start fails, or the admin API answers 400, naming the field and the closest
 * one); and every `matches` call, whose literal pattern must be RE2 (CEL's regex syntax) and which is pointed at the
 * linear matcher (rules/re2/) instead of the library's backtracking RegExp.
 *
 * Works on the parsed tree of @marcbachmann/cel-js: nodes `{op, args}` — `id`, `value`, `.` (select), `[]` (index),
 * `call`, `rcall` (receiver call: [name, receiver, args]). Variables bound by a comprehension (`all`, `exists`,
 * `exists_one`, `map`, `filter`) or by `cel.bind` shadow the request's within their expression.
 */
import { didYouMean } from "../../text/suggest.ts";
import { compileRe2, Re2SyntaxError } from "./re2/match.ts";

/** The fields of each variable a condition sees (rules/conditions.ts ConditionInput, McpConditionInput). */
export const FIELDS: Record<string, readonly string[]> = {
  request: ["method", "path", "segments", "query", "headers", "body", "body_size"],
  mcp: ["method", "tool", "arguments"],
  agent: ["id", "client_id"],
  user: ["id"],
  provider: ["id"],
  token: ["scopes"],
};

/** The name `matches` calls are renamed to: registered with the linear matcher as its handler (rules/conditions.ts). */
export const RE2_MATCHES = "ath_re2_matches";

export class ConditionCheckError extends Error {
  override readonly name = "ConditionCheckError";
}

/**
 * Checks the tree (throws ConditionCheckError naming the first problem) and renames its `matches` calls to
 * RE2_MATCHES. `variables`: the ones this rule's kind declares (a field of another is CEL's own error).
 */
export function checkConditionTree(root: unknown, variables: readonly string[]): void {
  walk(root as AstNode, new Set(), variables);
}

// internal

interface AstNode {
  op: string;
  args: unknown;
}

const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);

function walk(node: AstNode, bound: ReadonlySet<string>, variables: readonly string[]): void {
  if (!isNode(node)) return;
  const args = node.args;
  if (node.op === "." || node.op === "[]") {
    const [target, field] = args as [AstNode, unknown];
    const name = node.op === "." ? field : isNode(field) && field.op === "value" ? field.args : undefined;
    if (isNode(target) && target.op === "id" && typeof target.args === "string" && typeof name === "string") checkField(target.args, name, bound, variables);
  }
  if (node.op === "rcall") {
    const [name, receiver, callArgs] = args as [string, AstNode, AstNode[]];
    if (name === "matches") {
      checkPattern(callArgs[0]);
      (args as unknown[])[0] = RE2_MATCHES;
    }
    const isBind = name === "bind" && isNode(receiver) && receiver.op === "id" && receiver.args === "cel";
    if ((COMPREHENSIONS.has(name) || isBind) && isNode(callArgs[0]) && callArgs[0].op === "id" && typeof callArgs[0].args === "string") {
      // the variable is bound in the expressions after it (for cel.bind: after its initial value)
      const inner = new Set(bound).add(callArgs[0].args);
      walk(receiver, bound, variables);
      callArgs.forEach((a, i) => walk(a, i === 0 || (isBind && i === 1) ? bound : inner, variables));
      return;
    }
  }
  if (node.op === "call") {
    const [name, callArgs] = args as [string, AstNode[]];
    if (name === "matches") {
      checkPattern(callArgs[1]);
      (args as unknown[])[0] = RE2_MATCHES;
    }
  }
  for (const child of children(args)) walk(child, bound, variables);
}

function checkField(variable: string, field: string, bound: ReadonlySet<string>, variables: readonly string[]): void {
  const fields = FIELDS[variable];
  if (!fields || bound.has(variable) || !variables.includes(variable) || fields.includes(field)) return;
  throw new ConditionCheckError(`${variable}.${field}: ${variable} has no field "${field}"${didYouMean(field, fields)}; its fields: ${fields.join(", ")}`);
}

/** A literal pattern must be RE2 (a pattern computed at run time is checked when used: an evaluation error). */
function checkPattern(pattern: unknown): void {
  if (!isNode(pattern) || pattern.op !== "value" || typeof pattern.args !== "string") return;
  try {
    compileRe2(pattern.args);
  } catch (err) {
    if (err instanceof Re2SyntaxError) throw new ConditionCheckError(`matches(${JSON.stringify(pattern.args)}): not an RE2 pattern: ${err.message}`);
    throw err;
  }
}

function children(args: unknown): AstNode[] {
  if (isNode(args)) return [args];
  if (!Array.isArray(args)) return [];
  return args.flatMap((a) => (isNode(a) ? [a] : Array.isArray(a) ? children(a) : []));
}

function isNode(v: unknown): v is AstNode {
  return typeof v === "object" && v !== null && typeof (v as AstNode).op === "string" && "args" in v;
}
