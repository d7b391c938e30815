/**
 * The sample API behind the sandbox provider, under /demo/api: each demo user's notes, in memory.
 * GET needs `notes:read`; POST and DELETE need `notes:write` (matching the provider's `scope_rules`).
 */
import { randomSecret } from "../crypto/secrets.ts";
import { TTL, type DemoContext, type Note } from "./context.ts";
import { authenticateBearer, insufficientScope, json, readBody } from "./http.ts";

const MAX_NOTES_PER_USER = 200;
const MAX_NOTE_CHARS = 2000;

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

  const notes = notesOf(ctx, grant.sub, grant.name);
  if (req.method === "GET" && !id) {
    return json({ user: grant.sub, notes: [...notes.values()].sort((a, b) => a.created_at.localeCompare(b.created_at)) });
  }
  if (req.method === "POST") return create(req, notes);
  const note = notes.get(id ?? "");
  if (!note) return notFound();
  if (req.method === "DELETE") {
    notes.delete(note.id);
    return new Response(null, { status: 204 });
  }
  return json(note);
}

// internal

async function create(req: Request, notes: Map<string, Note>): Promise<Response> {
  const text = await readBody(req);
  if (text === null) return json({ error: "invalid_request", error_description: "the body is too large" }, 413);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return invalid('the body must be JSON: {"text": "…"}');
  }
  const note = body && typeof body === "object" ? (body as { text?: unknown }).text : undefined;
  if (typeof note !== "string" || !note.trim() || note.length > MAX_NOTE_CHARS) {
    return invalid(`text must be a non-empty string of at most ${MAX_NOTE_CHARS} characters`);
  }
  if (notes.size >= MAX_NOTES_PER_USER) return invalid(`a demo user keeps at most ${MAX_NOTES_PER_USER} notes`);
  const created = addNote(notes, note);
  return json(created, 201, { Location: `notes/${created.id}` });
}

/** A user's notes; a new user starts with a welcome note so the first `GET /notes` shows something. */
function notesOf(ctx: DemoContext, sub: string, name: string): Map<string, Note> {
  let notes = ctx.notes.get(sub);
  if (!notes) {
    notes = new Map();
    addNote(notes, `Welcome to Demo Notes, ${name}! This note lives in the sandbox's memory.`);
  }
  ctx.notes.set(sub, notes, TTL.notesMs); // sliding expiry
  return notes;
}

function addNote(notes: Map<string, Note>, text: string): Note {
  const note = { id: `n_${randomSecret(6)}`, text, created_at: new Date().toISOString() };
  notes.set(note.id, note);
  return note;
}

function invalid(description: string): Response {
  return json({ error: "invalid_request", error_description: description }, 400);
}

function notFound(): Response {
  return json({ error: "not_found", error_description: "no such resource" }, 404);
}
