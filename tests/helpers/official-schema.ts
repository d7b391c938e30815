/**
 * The official ATH protocol v0.1 JSON Schema (docs/spec/ath-protocol-0.1.schema.json, a copy of the published one),
 * checked with Ajv — a real JSON Schema 2020-12 validator, not our own zod transcription of it.
 */
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { resolve } from "node:path";

const schema = await Bun.file(resolve(import.meta.dir, "../../docs/spec/ath-protocol-0.1.schema.json")).json();
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv);
ajv.addSchema(schema);

/** The validation errors of `value` against `#/$defs/<name>` of the official schema (empty when it is valid). */
export function officialSchemaErrors(name: string, value: unknown): string[] {
  const validate = ajv.getSchema(`${schema.$id}#/$defs/${name}`);
  if (!validate) throw new Error(`the official schema has no $defs/${name}`);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "invalid"}`);
}
