import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import ts from 'typescript';

/**
 * The layering rules of DESIGN §2 as a check over import edges (docs/architecture.md, "Layering"). Every relative
 * `import`, `export … from`, `import()` (types included) and `new URL('./x', import.meta.url)` of a .ts file is an
 * edge; each edge is judged by the folder and role of both ends. Besides imports, two couplings no import shows:
 * a stream name spelled outside the module that owns it, and a table private to a process named elsewhere.
 */

/** Packages that do I/O: nothing under `domain/`, and no platform module it imports, may import them. */
const IO_PACKAGES = new Set([
  'fs',
  'fs/promises',
  'net',
  'tls',
  'dns',
  'dns/promises',
  'http',
  'https',
  'http2',
  'child_process',
  'worker_threads',
  'pg',
  'kysely',
  'express',
  'ioredis',
  'undici',
  'nodemailer',
  'smtp-server',
  'mailauth',
  'mailparser',
  'dns2',
  '@kurrent/kurrentdb-client',
]);

/**
 * Edges that break a rule but are kept for now, each with the reason and what removes it. The check fails on an
 * entry no edge uses any more, so the list only shrinks.
 */
export const ALLOWED: { from: string; to: string; why: string }[] = [];

export interface Violation {
  from: string;
  /** The imported file, `package:<name>`, `stream:<prefix>` or `table:<name>`. */
  to: string;
  rule: string;
}

interface Edge {
  to: string;
  typeOnly: boolean;
}

/** The floors from the ground up (DESIGN §2); `free` is bin/, bench/, test/, sdk/, dashboard/, examples/. */
const LAYERS = ['platform', 'domain', 'read-side', 'projections', 'write-side', 'processes', 'smtp'] as const;
type Layer = (typeof LAYERS)[number] | 'free';

const layerOf = (file: string): Layer => LAYERS.find((l) => l === file.split('/')[0]) ?? 'free';

const base = (file: string) => posix.basename(file);
const isRoutes = (file: string) => /(^|[-.])routes\.ts$/.test(base(file));
/** `processes/<name>/…` belongs to the process `<name>`; a top-level module of processes/ to none. */
const processOf = (file: string) => /^processes\/([^/]+)\//.exec(file)?.[1] ?? null;

/** What each floor may import besides itself: only floors below it, read-side and write-side never each other. */
const BELOW: Record<Exclude<Layer, 'free'>, Layer[]> = {
  platform: [],
  domain: ['platform'],
  'read-side': ['platform', 'domain'],
  projections: ['platform', 'domain', 'read-side'],
  'write-side': ['platform', 'domain'],
  processes: ['platform', 'domain', 'read-side', 'write-side'],
  smtp: ['platform', 'domain', 'read-side', 'write-side', 'processes'],
};

/**
 * The platform modules that do no I/O: those whose value imports reach no I/O package, directly or through other
 * platform modules. `domain/` may import values only from these (types from any).
 */
function ioFreePlatform(sources: Map<string, string>): Set<string> {
  const edges = new Map<string, { files: Edge[]; packages: Edge[] }>();
  for (const [file, source] of sources)
    if (layerOf(file) === 'platform') edges.set(file, edgesOf(file, source));
  const tainted = new Set<string>();
  let changed = true;
  while (changed) {
    changed = false;
    for (const [file, { files, packages }] of edges) {
      if (tainted.has(file)) continue;
      const io =
        packages.some((p) => !p.typeOnly && IO_PACKAGES.has(p.to)) ||
        files.some((f) => !f.typeOnly && (tainted.has(f.to) || !edges.has(f.to)));
      if (io) {
        tainted.add(file);
        changed = true;
      }
    }
  }
  return new Set([...edges.keys()].filter((f) => !tainted.has(f)));
}

/** Why `from` may not import `to`, or null when it may. */
function judge(from: string, edge: Edge, pure: Set<string>): string | null {
  const { to } = edge;
  const fromLayer = layerOf(from);
  if (fromLayer === 'free') return null;
  const toLayer = layerOf(to);
  if (toLayer === 'free') return `${fromLayer}/ imports only the floors below it, not ${to.split('/')[0]}/`;
  if (toLayer !== fromLayer && !BELOW[fromLayer].includes(toLayer))
    return `${fromLayer}/ imports only ${[fromLayer, ...BELOW[fromLayer]].join('/, ')}/`;
  if (fromLayer === 'domain' && toLayer === 'platform' && !edge.typeOnly && !pure.has(to))
    return 'domain/ imports values only from platform modules that do no I/O';
  if (toLayer === 'read-side' && isRoutes(to)) return 'routes are imported by the composition root only';
  if (toLayer === 'write-side' && isRoutes(to)) return 'routes are imported by the composition root only';
  if (fromLayer === 'processes' || fromLayer === 'smtp') {
    const own = processOf(from);
    const target = processOf(to);
    if (target !== null && target !== own)
      return own === null
        ? "a shared module imports no process's folder"
        : "a process imports no other process's folder (shared code lives in a top-level module of processes/ or lower)";
  }
  return null;
}

/** The relative module edges of a source file, resolved to repository paths, and its package imports. */
function edgesOf(file: string, source: string): { files: Edge[]; packages: Edge[]; strings: string[] } {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const files: Edge[] = [];
  const packages: Edge[] = [];
  const strings: string[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    if (spec.startsWith('.'))
      files.push({ to: posix.normalize(posix.join(posix.dirname(file), spec)), typeOnly });
    else packages.push({ to: spec.replace(/^node:/, ''), typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        !!clause &&
        (clause.isTypeOnly ||
          (!clause.name &&
            !!clause.namedBindings &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, typeOnly);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      if (ts.isLiteralTypeNode(arg) && ts.isStringLiteral(arg.literal)) add(arg.literal.text, true);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0].text, false);
    } else if (
      ts.isNewExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'URL' &&
      node.arguments?.length === 2 &&
      ts.isStringLiteralLike(node.arguments[0]) &&
      node.arguments[1].getText(sf) === 'import.meta.url'
    ) {
      add(node.arguments[0].text, false);
    } else if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node)) {
      // Module specifiers are string literals too; they are checked as edges, never as text.
      if (!ts.isImportDeclaration(node.parent) && !ts.isExportDeclaration(node.parent))
        strings.push(node.text);
    } else if (ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      strings.push(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { files, packages, strings };
}

/** `prefix` of every `xStream = (…) => \`prefix-${…}\`` with the folder that owns it. */
function streamOwners(sources: Map<string, string>): Map<string, string> {
  const owners = new Map<string, string>();
  for (const [file, source] of sources) {
    if (layerOf(file) === 'free') continue;
    for (const m of source.matchAll(/\w+Stream\s*=\s*\([^)]*\)\s*(?::[^=]+)?=>\s*`([a-z]+)-\$\{/g))
      owners.set(m[1], posix.dirname(file));
  }
  return owners;
}

/** Tables a process creates in its own folder: its private state, which no other folder names. */
function privateTables(sources: Map<string, string>): Map<string, string> {
  const tables = new Map<string, string>();
  for (const [file, source] of sources) {
    const process = processOf(file);
    if (!process) continue;
    for (const m of source.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/g))
      tables.set(m[1], `processes/${process}/`);
  }
  return tables;
}

/** Every violation in a set of files (repository-relative paths to source text), allowed edges left out. */
export function checkLayering(sources: Map<string, string>, allowed = ALLOWED): Violation[] {
  const found: Violation[] = [];
  const streams = streamOwners(sources);
  const tables = privateTables(sources);
  const pure = ioFreePlatform(sources);
  for (const [from, source] of sources) {
    if (layerOf(from) === 'free') continue;
    const { files, packages, strings } = edgesOf(from, source);
    for (const edge of files) {
      const rule = judge(from, edge, pure);
      if (rule) found.push({ from, to: edge.to, rule });
    }
    for (const p of packages)
      if (layerOf(from) === 'domain' && !p.typeOnly && IO_PACKAGES.has(p.to))
        found.push({ from, to: `package:${p.to}`, rule: 'domain/ does no I/O' });
    for (const [prefix, owner] of streams) {
      if (from.startsWith(`${owner}/`)) continue;
      if (strings.some((s) => s === `${prefix}-`))
        found.push({
          from,
          to: `stream:${prefix}-`,
          rule: `stream names are built only by the stream function in ${owner}/ (import it)`,
        });
    }
    for (const [table, owner] of tables) {
      if (from.startsWith(owner)) continue;
      if (strings.some((s) => new RegExp(`\\b${table}\\b`).test(s)))
        found.push({ from, to: `table:${table}`, rule: `${table} is private to ${owner}` });
    }
  }
  return found.filter((v) => !allowed.some((a) => a.from === v.from && a.to === v.to));
}

/** The allow-list entries that no current violation needs (stale: remove them). */
export function unusedAllowances(sources: Map<string, string>, allowed = ALLOWED) {
  const all = checkLayering(sources, []);
  return allowed.filter((a) => !all.some((v) => v.from === a.from && v.to === a.to));
}

/** Every .ts and .tsx file of the repository by relative path (node_modules, data and dot-folders left out). */
export function repositorySources(root: string): Map<string, string> {
  const sources = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules' || entry.name === 'data') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
        sources.set(relative(root, path).split('\\').join('/'), readFileSync(path, 'utf8'));
    }
  };
  walk(root);
  return sources;
}

export const repositoryRoot = join(dirname(new URL(import.meta.url).pathname), '..', '..');
