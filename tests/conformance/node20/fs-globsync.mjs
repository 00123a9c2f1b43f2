// All of 'node:fs' plus a minimal globSync(pattern, { cwd }) for Node < 22.
// The conformance harness only globs for result files ('**/checks.json'), so this supports
// '*', '?' and '**' path segments over a recursive directory walk; it is not a general glob.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';

function toRegExp(pattern) {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '*' && pattern[i + 1] === '*') {
      const slash = pattern[i + 2] === '/';
      out += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (ch === '*') {
      out += '[^/]*';
    } else if (ch === '?') {
      out += '[^/]';
    } else {
      out += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${out}$`);
}

function walk(root, rel, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    out.push(child);
    if (entry.isDirectory()) walk(root, child, out); // symlinks are not followed
  }
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const patterns = (Array.isArray(pattern) ? pattern : [pattern]).map((p) =>
    toRegExp(String(p).replaceAll('\\', '/'))
  );
  const all = [];
  walk(cwd, '', all);
  return all
    .filter((p) => patterns.some((re) => re.test(p)))
    .map((p) => p.split('/').join(path.sep));
}

export default { ...fs, globSync };
