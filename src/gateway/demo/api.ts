/**
 * The sample API behind the sandbox provider, under /demo/api: each demo user's notes (notes.ts).
 * GET needs `notes:read`; POST and DELETE need `notes:write` (matching the provider's `scope_rules`).
 */
import type { DemoContext } from "./context.ts";
import { authenticateBearer, insufficientScope, json, readBody } from "./http.ts";
import { addNote, deleteNote, findNote, listNotes } from "./notes.ts";

/** `path` is relative to /demo/api, e.g. "/notes" or "/notes/n_abc". */
export async function notesApi(req: Request, path: string, ctx: DemoContext): Promise<Response> {
  const m = /^\/notes(?:\/([A-Za-z0-9_-]+))?\/?$/.exec(path);
  if (!m) return notFound();
  const id = m[1];
  const allowed = id ? ["GET", "DELETE"] : ["GET", "POST"];
  if (!allowed.includes(req.method)) {
    return json({ error: "method_not_allowed", error_description: `use ${allowed.join(" or ")}` }, 405, { Allow: allowed.join(", ") });
  }
  const grant = authenticateBearer(req, ctx);
  if (grant instanceof Response) return grant;
  const needed = req.method === "GET" ? "notes:read" : "notes:write";
  if (!grant.scopes.includes(needed)) return insufficientScope(needed);

  if (req.method === "GET" && !id) return json({ user: grant.sub, notes: listNotes(ctx, grant.sub, grant.name) });
  if (req.method === "POST") return create(req, ctx, grant.sub, grant.name);
  if (req.method === "DELETE") return deleteNote(ctx, grant.sub, grant.name, id ?? "") ? new Response(null, { status: 204 }) : notFound();
  const note = findNote(ctx, grant.sub, grant.name, id ?? "");
  return note ? json(note) : notFound();
}

// internal

async function create(req: Request, ctx: DemoContext, sub: string, name: string): Promise<Response> {
  const text = await readBody(req);
  if (text === null) return json({ error: "invalid_request", error_description: "the body is too large" }, 413);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return invalid('the body must be JSON: {"text": "…"}');
  }
  const note = addNote(ctx, sub, name, body && typeof body === "object" ? (body as { text?: unknown }).text : undefined);
  if ("problem" in note) return invalid(note.problem);
  return json(note, 201, { Location: `notes/${note.id}` });
}

function invalid(description: string): Response {
  return json({ error: "invalid_request", error_description: description }, 400);
}

function notFound(): Response {
  return json({ error: "not_found", error_description: "no such resource" }, 404);
}
