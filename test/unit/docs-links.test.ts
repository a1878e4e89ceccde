import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');
const README_MAX_LINES = 300;

/** README.md, ARCHITECTURE.md and every docs/*.md, as absolute paths. */
function docFiles(): string[] {
  const docs = join(ROOT, 'docs');
  const pages = existsSync(docs)
    ? readdirSync(docs)
        .filter((f) => f.endsWith('.md'))
        .map((f) => join(docs, f))
    : [];
  return [join(ROOT, 'README.md'), join(ROOT, 'ARCHITECTURE.md'), ...pages];
}

/** Markdown without fenced code blocks and inline code, where brackets are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a page offers, duplicates numbered as GitHub does (`x`, `x-1`, …). */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const withoutFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative links of one page that do not resolve: a missing file or a missing anchor. */
function brokenLinks(file: string, markdown: string, read: (path: string) => string | undefined): string[] {
  const broken: string[] = [];
  for (const m of prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [path, anchor] = target.split('#', 2);
    const targetFile = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
    const text = path === '' ? markdown : read(targetFile);
    if (text === undefined) {
      broken.push(`${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && targetFile.endsWith('.md') && !anchorsOf(text).has(anchor)) {
      broken.push(`${target} (no heading with that anchor)`);
    }
  }
  return broken;
}

function readIfExists(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  return statSync(path).isDirectory() ? '' : readFileSync(path, 'utf8');
}

/** Every `IDPOOL_*` name src/config/ reads (as a string literal). */
function configVariables(): string[] {
  const dir = join(ROOT, 'src/config');
  const names = new Set<string>();
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/['"`](IDPOOL_[A-Z0-9_]*[A-Z0-9])['"`]/g))
      names.add(m[1]);
  }
  return [...names].sort();
}

/** Variables named in the first column of the README's "Configuration" table. */
function readmeConfigTable(readme: string): Set<string> {
  const section = /^## Configuration\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
  const names = new Set<string>();
  for (const line of section.split('\n').filter((l) => l.startsWith('|'))) {
    const firstCell = line.split('|')[1] ?? '';
    for (const m of firstCell.matchAll(/`(IDPOOL_[A-Z0-9_]+)`/g)) names.add(m[1]);
  }
  return names;
}

describe('docs: links, README length, configuration table', () => {
  it('finds a broken file link and a broken anchor, and accepts good ones', () => {
    const pages: Record<string, string> = { '/r/a.md': '# Title\n## Some `code` heading!\n## Title\n', '/r/b.md': '' };
    const read = (p: string) => pages[p];
    const page =
      '[ok](a.md#some-code-heading) [dup](a.md#title-1) [self](#x) [web](https://example.com)\n```\n[in code](nowhere.md)\n```\n# x\n';
    expect(brokenLinks('/r/b.md', page, read)).toEqual([]);
    expect(brokenLinks('/r/b.md', '[f](c.md) [a](a.md#nope)', read)).toEqual([
      'c.md (no such file)',
      'a.md#nope (no heading with that anchor)',
    ]);
    expect(slug('Why no id repeats: the pool epoch')).toBe('why-no-id-repeats-the-pool-epoch');
  });

  it('every relative link and anchor in README.md, ARCHITECTURE.md and docs/*.md resolves', () => {
    const files = docFiles();
    expect(files.length).toBeGreaterThan(2);
    const broken = files.flatMap((file) =>
      brokenLinks(file, readFileSync(file, 'utf8'), readIfExists).map((b) => `${relative(ROOT, file)}: ${b}`),
    );
    expect(broken).toEqual([]);
  });

  it(`README.md is at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it("every IDPOOL_* variable src/config/ reads is in the README's configuration table", () => {
    const variables = configVariables();
    expect(variables.length).toBeGreaterThan(30);
    const table = readmeConfigTable(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(variables.filter((v) => !table.has(v))).toEqual([]);
  });
});
