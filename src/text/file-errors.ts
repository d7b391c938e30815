/**
 * A file that could not be read, said in words (issue 40: messages spoke the library — `ENOENT`): the providers file,
 * `--body @file`, `--key`, TLS certificates, admin input files. The errno code stays out of a person's way; an
 * unknown one is shown as it is, since it is all there is to go on.
 */

const WORDS: Record<string, string> = {
  ENOENT: "no such file",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "it is a directory, not a file",
  ENOTDIR: "a part of its path is not a directory",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "the path is too long",
  EMFILE: "too many open files",
  EIO: "an input/output error of the disk",
};

/** Why a file could not be read: `no such file`, `permission denied`… (else the error's code or message). */
export function fileProblem(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err?.code === "string" ? err.code : undefined;
  if (code !== undefined) return WORDS[code] ?? code;
  return typeof err?.message === "string" ? err.message : String(e);
}
