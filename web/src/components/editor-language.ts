/** The languages the code editor highlights. */
export type EditorLanguage = 'shell' | 'python' | 'javascript' | 'json' | 'dockerfile' | 'text';

/** A script's language from its shebang (how the sandbox runs it), else from its file name. */
export function scriptLanguage(name: string, content: string): EditorLanguage {
  const shebang = /^#!\s*(\S+)(?:\s+(\S+))?/.exec(content);
  const program = shebang ? ((shebang[1].endsWith('/env') ? shebang[2] : shebang[1]) ?? '') : '';
  const hint = program || name;
  if (/python|\.py$/.test(hint)) return 'python';
  if (/node|deno|bun|\.m?js$|\.ts$/.test(hint)) return 'javascript';
  if (/\.json$/.test(hint)) return 'json';
  return 'shell';
}
