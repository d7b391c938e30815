/**
 * Where a JSON text first breaks, as line and column: Bun's JSON.parse says what is wrong but not where, and a
 * providers file is edited by hand. A strict RFC 8259 scanner (no comments, no trailing commas) that stops at the
 * first error; used only after JSON.parse has already refused the text.
 */

export interface JsonSyntaxError {
  line: number;
  column: number;
  message: string;
}

export function locateJsonError(text: string): JsonSyntaxError | undefined {
  let i = 0;
  const fail = (message: string): never => {
    throw new Located(i, message);
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const found = () => (i >= text.length ? "the end of the file" : `'${text[i]}'`);
  const string = () => {
    i++; // the opening quote
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail("a control character (a line break?) inside a string");
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail("\\u must be followed by four hex digits");
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? "")) fail(`invalid escape \\${text[i] ?? ""}`);
      }
      i++;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail(text[i] === "}" ? "a trailing comma before '}'" : `expected a "quoted" field name, found ${found()}`);
        string();
        ws();
        if (text[i] !== ":") fail(`expected ':' after the field name, found ${found()}`);
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") return void i++;
        fail(`expected ',' or '}', found ${found()}${text[i] === '"' ? " (a missing comma?)" : ""}`);
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") return void i++;
      for (;;) {
        ws();
        if (text[i] === "]") fail("a trailing comma before ']'");
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") return void i++;
        fail(`expected ',' or ']', found ${found()}`);
      }
    }
    if (c === '"') return string();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (literal) return void (i += literal[0].length);
    fail(c === "'" ? "strings and names take double quotes" : c === "/" ? "comments are not JSON" : `expected a value, found ${found()}`);
  };
  try {
    value();
    ws();
    if (i < text.length) fail(`unexpected ${found()} after the end of the document`);
    return undefined;
  } catch (e) {
    if (!(e instanceof Located)) throw e;
    const before = text.slice(0, e.offset);
    const line = before.split("\n").length;
    return { line, column: e.offset - before.lastIndexOf("\n"), message: e.message };
  }
}

class Located extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}
