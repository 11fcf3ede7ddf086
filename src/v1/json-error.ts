// Locates a JSON syntax error the way Python's json module reports it (position and
// message), because v1 clients receive FastAPI's `json_invalid` detail with both.
// Only called after JSON.parse has failed, so speed does not matter here.

export interface JsonErrorInfo {
  pos: number;
  msg: string;
}

class Fail extends Error {
  constructor(
    readonly pos: number,
    readonly msg: string,
  ) {
    super(msg);
  }
}

const WS = new Set([' ', '\t', '\n', '\r']);

export function locateJsonError(text: string): JsonErrorInfo {
  let i = 0;
  const skip = () => {
    while (i < text.length && WS.has(text[i]!)) i++;
  };
  const string = (): void => {
    const start = i;
    i++; // opening quote
    for (;;) {
      if (i >= text.length) throw new Fail(start, 'Unterminated string starting at');
      const c = text[i]!;
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) throw new Fail(i, 'Invalid \\uXXXX escape');
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else if (e === undefined) throw new Fail(start, 'Unterminated string starting at');
        else throw new Fail(i, 'Invalid \\escape');
        continue;
      }
      if (c.charCodeAt(0) < 0x20) throw new Fail(i, 'Invalid control character at');
      i++;
    }
  };
  const value = (): void => {
    skip();
    const c = text[i];
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    for (const word of ['true', 'false', 'null', 'NaN', 'Infinity', '-Infinity']) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (m && m[0] !== '-' && m[0] !== '') {
      i += m[0].length;
      return;
    }
    throw new Fail(i, 'Expecting value');
  };
  const object = (): void => {
    i++;
    skip();
    if (text[i] === '}') {
      i++;
      return;
    }
    for (;;) {
      skip();
      if (text[i] !== '"') throw new Fail(i, 'Expecting property name enclosed in double quotes');
      string();
      skip();
      if (text[i] !== ':') throw new Fail(i, "Expecting ':' delimiter");
      i++;
      value();
      skip();
      if (text[i] === '}') {
        i++;
        return;
      }
      if (text[i] !== ',') throw new Fail(i, "Expecting ',' delimiter");
      i++;
      skip();
      if (text[i] !== '"') throw new Fail(i, 'Expecting property name enclosed in double quotes');
    }
  };
  const array = (): void => {
    i++;
    skip();
    if (text[i] === ']') {
      i++;
      return;
    }
    for (;;) {
      value();
      skip();
      if (text[i] === ']') {
        i++;
        return;
      }
      if (text[i] !== ',') throw new Fail(i, "Expecting ',' delimiter");
      i++;
    }
  };
  try {
    value();
    skip();
    if (i < text.length) throw new Fail(i, 'Extra data');
    return { pos: text.length, msg: 'Expecting value' };
  } catch (error) {
    if (error instanceof Fail) return { pos: error.pos, msg: error.msg };
    throw error;
  }
}
