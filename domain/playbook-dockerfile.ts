/**
 * What the playbook needs to know about a Dockerfile without building it: its instructions (continuations joined,
 * honouring the `# escape=` directive), the images it starts from, and the patterns a person should review before a
 * model-written Dockerfile is used (docs/playbooks.md, "Ops"). Pure.
 */

export interface Instruction {
  keyword: string;
  args: string;
}

/** The escape character a Dockerfile declares in its parser directives (`# escape=``), else backslash. */
function escapeChar(text: string): string {
  for (const line of text.split('\n')) {
    const m = /^#\s*escape\s*=\s*(\S)\s*$/i.exec(line.trim());
    if (m) return m[1]!;
    // Directives are only recognised before the first instruction, comment or blank line.
    if (!/^#\s*\w+\s*=/.test(line.trim())) break;
  }
  return '\\';
}

/** Instructions in order, each on one logical line. Comments and blank lines are dropped. */
export function dockerfileInstructions(text: string): Instruction[] {
  const esc = escapeChar(text);
  const out: Instruction[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd();
    if (pending === '' && /^\s*#/.test(line)) continue;
    if (pending !== '' && /^\s*#/.test(line)) continue; // comments inside a continuation are skipped, as docker does
    if (line.endsWith(esc)) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full === '') continue;
    const m = /^(\S+)\s*(.*)$/.exec(full)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]! });
  }
  if (pending.trim() !== '') {
    const m = /^(\S+)\s*(.*)$/.exec(pending.trim())!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]! });
  }
  return out;
}

/** The images `FROM` lines name, leaving out earlier stages referred to by their alias. */
export function baseImages(text: string): string[] {
  const aliases = new Set<string>();
  const images: string[] = [];
  for (const { keyword, args } of dockerfileInstructions(text)) {
    if (keyword !== 'FROM') continue;
    const words = args.split(/\s+/).filter((w) => w !== '' && !w.startsWith('--'));
    const image = words[0];
    if (!image) continue;
    if (!aliases.has(image.toLowerCase())) images.push(image);
    if (words[1]?.toLowerCase() === 'as' && words[2]) aliases.add(words[2].toLowerCase());
  }
  return images;
}

export const hasFrom = (text: string) => dockerfileInstructions(text).some((i) => i.keyword === 'FROM');

const needsReview = 'needs review';

/**
 * Review flags of a proposed Dockerfile: a base image that is neither the job's nor one the current Dockerfile
 * already uses, a download piped into a shell, ADD from a URL or git, COPY --from an external image.
 */
export function dockerfileFlags(text: string, jobImage: string | null, current: string | null): string[] {
  const flags: string[] = [];
  const known = new Set<string>([...(jobImage ? [jobImage] : []), ...(current ? baseImages(current) : [])]);
  for (const image of baseImages(text)) {
    if (!known.has(image))
      flags.push(
        `${needsReview}: the Dockerfile starts from ${image}, which is neither the job's image nor one it used before`,
      );
  }
  const stages = new Set<string>();
  let stageIndex = 0;
  for (const { keyword, args } of dockerfileInstructions(text)) {
    if (keyword === 'FROM') {
      const words = args.split(/\s+/).filter((w) => w !== '' && !w.startsWith('--'));
      stages.add(String(stageIndex++));
      if (words[1]?.toLowerCase() === 'as' && words[2]) stages.add(words[2].toLowerCase());
    }
    if (keyword === 'RUN' && /\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b/.test(args)) {
      flags.push(`${needsReview}: the Dockerfile pipes a download into a shell`);
    }
    if (keyword === 'ADD' && /(^|\s)(https?:\/\/|git@|git:\/\/|ssh:\/\/)|\.git(\s|#|$)/.test(args)) {
      flags.push(`${needsReview}: the Dockerfile adds files from a URL or a git repository`);
    }
    if (keyword === 'COPY') {
      const from = /--from=(\S+)/.exec(args)?.[1];
      if (from && !stages.has(from.toLowerCase()))
        flags.push(`${needsReview}: the Dockerfile copies files from the external image ${from}`);
    }
  }
  return [...new Set(flags)];
}
