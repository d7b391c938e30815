/**
 * Each demo user's notes, in the sandbox's memory: the one store the notes API (/demo/api) and the sandbox MCP server
 * (/demo/mcp) both read and write, with its limits — so a note added through one door is listed by the other.
 */
import { randomSecret } from "../crypto/secrets.ts";
import { TTL, type DemoContext, type Note } from "./context.ts";

export const MAX_NOTES_PER_USER = 200;
export const MAX_NOTE_CHARS = 2000;

/** A user's notes, oldest first; a new user starts with a welcome note so the first look shows something. */
export function listNotes(ctx: DemoContext, sub: string, name: string): Note[] {
  return [...notesOf(ctx, sub, name).values()].sort((a, b) => a.created_at.localeCompare(b.created_at));
}

export function findNote(ctx: DemoContext, sub: string, name: string, id: string): Note | undefined {
  return notesOf(ctx, sub, name).get(id);
}

/** Adds a note, or says what is wrong with it (one sentence, for an API error or a tool error alike). */
export function addNote(ctx: DemoContext, sub: string, name: string, text: unknown): Note | { problem: string } {
  if (typeof text !== "string" || !text.trim() || text.length > MAX_NOTE_CHARS) {
    return { problem: `text must be a non-empty string of at most ${MAX_NOTE_CHARS} characters` };
  }
  const notes = notesOf(ctx, sub, name);
  if (notes.size >= MAX_NOTES_PER_USER) return { problem: `a demo user keeps at most ${MAX_NOTES_PER_USER} notes` };
  return put(notes, text);
}

/** True when the note existed. */
export function deleteNote(ctx: DemoContext, sub: string, name: string, id: string): boolean {
  return notesOf(ctx, sub, name).delete(id);
}

// internal

function notesOf(ctx: DemoContext, sub: string, name: string): Map<string, Note> {
  let notes = ctx.notes.get(sub);
  if (!notes) {
    notes = new Map();
    put(notes, `Welcome to Demo Notes, ${name}! This note lives in the sandbox's memory.`);
  }
  ctx.notes.set(sub, notes, TTL.notesMs); // sliding expiry
  return notes;
}

function put(notes: Map<string, Note>, text: string): Note {
  const note = { id: `n_${randomSecret(6)}`, text, created_at: new Date().toISOString() };
  notes.set(note.id, note);
  return note;
}
