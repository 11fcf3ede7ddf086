// A small reader of Dockerfiles and .dockerignore files for test/dockerfile.test.ts (no Docker
// engine is needed): instructions with continuation lines joined, stages, and the build context's
// exclusion rules.

export interface Instruction {
  keyword: string;
  /** The text after the keyword, continuation lines joined with a space. */
  args: string;
}

export interface Stage {
  name: string | null;
  base: string;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>;
  stages: Stage[];
}

function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (pending === '' && /^\s*(#|$)/.test(line)) continue;
    if (/^\s*#/.test(line)) continue; // a comment inside a continued instruction
    if (line.trimEnd().endsWith('\\')) {
      pending += line.trimEnd().slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    const match = /^(\S+)\s*(.*)$/.exec(full)!;
    out.push({ keyword: match[1]!.toUpperCase(), args: match[2]!.replace(/\s+/g, ' ').trim() });
  }
  if (pending !== '') throw new Error('Dockerfile ends inside a continued instruction');
  return out;
}

export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const ins of instructions(text)) {
    if (ins.keyword === 'FROM') {
      const match = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!match) throw new Error(`unreadable FROM ${ins.args}`);
      const base = match[1]!.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string | undefined, b: string | undefined) => globalArgs[(a ?? b)!] ?? '');
      stages.push({ name: match[2] ?? null, base, instructions: [] });
    } else if (stages.length === 0) {
      if (ins.keyword !== 'ARG') throw new Error(`${ins.keyword} before the first FROM`);
      const [name, value = ''] = ins.args.split('=');
      globalArgs[name!] = value;
    } else {
      stages.at(-1)!.instructions.push(ins);
    }
  }
  return { globalArgs, stages };
}

export interface Copy {
  from: string | null;
  sources: string[];
  destination: string;
}

/** COPY instructions of a stage (shell form), with their --from. */
export function copies(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.keyword === 'COPY')
    .map((i) => {
      const words = i.args.split(' ');
      const flags = words.filter((w) => w.startsWith('--'));
      const paths = words.filter((w) => !w.startsWith('--'));
      const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length) ?? null;
      return { from, sources: paths.slice(0, -1), destination: paths.at(-1)! };
    });
}

/** The exec-form (JSON array) command of CMD, ENTRYPOINT or HEALTHCHECK ... CMD. */
export function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['));
  return JSON.parse(json) as string[];
}

/** A .dockerignore pattern as a regular expression over slash-separated context paths. */
function patternRegex(pattern: string): RegExp {
  let re = '';
  const p = pattern.replace(/^\/+/, '').replace(/\/+$/, '');
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*' && p[i + 1] === '*') {
      re += '.*';
      i += p[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  // A pattern that names a folder excludes everything in it.
  return new RegExp(`^${re}(/.*)?$`);
}

/** Whether `file` (relative, slash-separated) is left out of the build context: the last matching line decides. */
export function makeIgnore(dockerignore: string): (file: string) => boolean {
  const rules = dockerignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => (l.startsWith('!') ? { keep: true, re: patternRegex(l.slice(1)) } : { keep: false, re: patternRegex(l) }));
  return (file) => {
    let ignored = false;
    for (const rule of rules) if (rule.re.test(file)) ignored = !rule.keep;
    return ignored;
  };
}
