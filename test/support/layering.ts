import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import ts from 'typescript';

/**
 * The layering rules of DESIGN §2 as a check over import edges (docs/architecture.md, "Layering"). Every relative
 * `import`, `export … from`, `import()` (types included) and `new URL('./x', import.meta.url)` of a .ts file is an
 * edge; each edge is judged by the folder and role of both ends. Besides imports, two couplings no import shows:
 * a stream name spelled outside the module that owns it, and a table private to a process named elsewhere.
 */

/**
 * Pure rules: modules of `write-side/` that do no I/O and hold knowledge other layers need, so `read-side/`,
 * `projections/`, `processes/` and `smtp/` may import them. A module becomes one by being listed here (a reviewed
 * decision); the check then holds it to the I/O-free rule. Every `write-side/<aggregate>/events.ts` is importable
 * the same way without a listing.
 */
export const PURE_RULES = new Set([
  'write-side/plans.ts', // the plan catalogue and the quota month
  'write-side/emails/status.ts', // the status roll-up
  'write-side/emails/addresses.ts', // address parsing and normalisation
  'write-side/emails/limits.ts', // the limits of an email
  'write-side/emails/owned-headers.ts', // headers a sender may not set
  'write-side/emails/verp.ts', // the return path that names an email
  'write-side/emails/tracking.ts', // tracking tokens and link rewriting
  'write-side/emails/public-event-types.ts', // the public names of an email's events
  'write-side/domains/dns-records.ts', // the records a domain publishes, and the return path they give
  'write-side/domains/domain-name.ts', // domain name normalisation
  'write-side/templates/content-rules.ts', // what a template may contain
  'write-side/templates/template-ast.ts',
  'write-side/webhooks/event-types.ts', // the public webhook event vocabulary
  'write-side/inbound/mime-shape.ts', // how much MIME structure a received message may have
  'write-side/inbound/spam-score.ts', // Postline's own spam score of a received message
]);

/** Modules of `platform/` that do no I/O: deciders, pure rules and events may import values only from these. */
export const PURE_PLATFORM = new Set([
  'platform/errors.ts',
  'platform/crypto.ts',
  'platform/unstorable-text.ts',
  'platform/storable-text.ts',
  'platform/bounded-map.ts',
]);

/** Packages that do I/O: an I/O-free module (decider, pure rule, events) may not import them. */
const IO_PACKAGES = new Set([
  'fs',
  'fs/promises',
  'dns',
  'dns/promises',
  'http',
  'https',
  'http2',
  'child_process',
  'worker_threads',
  'pg',
  'kysely',
  'ioredis',
  'undici',
  'nodemailer',
  'smtp-server',
  'mailauth',
  'dns2',
  '@electric-sql/pglite',
  '@kurrent/kurrentdb-client',
]);

/**
 * Edges that break a rule but are kept for now, each with the reason and what removes it. The check fails on an
 * entry no edge uses any more, so the list only shrinks.
 */
export const ALLOWED: { from: string; to: string; why: string }[] = [
  {
    // The delivery log (webhook_deliveries, webhook_attempts, webhook_endpoints) is the webhook process's own
    // state; GET /v1/webhooks/:id/deliveries reads it here. Goes when the delivery log gets a read-side owner.
    from: 'read-side/webhooks/webhooks.queries.ts',
    to: 'table:webhook_deliveries',
    why: 'webhook delivery log read by the read side',
  },
  {
    from: 'read-side/webhooks/webhooks.queries.ts',
    to: 'table:webhook_attempts',
    why: 'webhook delivery log read by the read side',
  },
  {
    from: 'read-side/webhooks/webhooks.queries.ts',
    to: 'table:webhook_endpoints',
    why: 'webhook endpoint health read by the read side',
  },
];

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

type Layer = 'platform' | 'read-side' | 'write-side' | 'projections' | 'processes' | 'smtp' | 'free';

const layerOf = (file: string): Layer => {
  const top = file.split('/')[0];
  return (
    (['platform', 'read-side', 'write-side', 'projections', 'processes', 'smtp'] as const).find(
      (l) => l === top,
    ) ?? 'free'
  );
};

const base = (file: string) => posix.basename(file);
const isEvents = (file: string) => /^write-side\/[^/]+\/[^/]+\.events\.ts$/.test(file);
const isPureRule = (file: string) => PURE_RULES.has(file);
const isCommands = (file: string) => file.startsWith('write-side/') && base(file).endsWith('.commands.ts');
const isRoutes = (file: string) => /(^|[-.])routes\.ts$/.test(base(file));
const isReadQueries = (file: string) => file.startsWith('read-side/') && base(file).endsWith('.queries.ts');
/** A resource's response schemas (zod): what the API answers, declared once for its command and query routes. */
const isResponseSchema = (file: string) =>
  file.startsWith('read-side/') && base(file).endsWith('.response.ts');
/** `processes/<name>/…` belongs to the process `<name>`; a top-level module of processes/ to none. */
const processOf = (file: string) => /^processes\/([^/]+)\//.exec(file)?.[1] ?? null;

/** A decider: `decider.ts`, `*.decider.ts`, or a module that declares a `Decider<…>` value. */
const isDecider = (file: string, source: string) =>
  file.startsWith('write-side/') && (base(file).endsWith('.decider.ts') || /:\s*Decider</.test(source));

/** Why `from` may not import `to`, or null when it may. */
function judge(from: string, source: string, edge: Edge): string | null {
  const { to } = edge;
  const fromLayer = layerOf(from);
  if (fromLayer === 'free') return null;
  const toLayer = layerOf(to);
  if (toLayer === 'free') return `${fromLayer}/ imports only the layers below it, not ${to.split('/')[0]}/`;
  const ioFree = isDecider(from, source) || isPureRule(from) || isEvents(from);
  if (ioFree) {
    if (isDecider(from, source) && to.startsWith('platform/http/'))
      return 'a decider imports nothing from platform/http/';
    if (toLayer === 'platform' && !edge.typeOnly && !PURE_PLATFORM.has(to))
      return 'a decider, pure rule or events module imports values only from I/O-free platform modules (PURE_PLATFORM)';
    if (toLayer === 'write-side' && !isEvents(to) && !isPureRule(to) && !isDecider(to, ''))
      return 'a decider, pure rule or events module imports only events, pure rules and deciders';
    if (toLayer !== 'platform' && toLayer !== 'write-side')
      return 'a decider, pure rule or events module imports nothing with I/O';
    if (isEvents(from) || isPureRule(from)) {
      if (toLayer === 'write-side' && !isEvents(to) && !isPureRule(to))
        return 'an events module or pure rule imports only events and pure rules';
    }
    return null;
  }
  const vocabulary = isEvents(to) || isPureRule(to);
  switch (fromLayer) {
    case 'platform':
      return toLayer === 'platform' ? null : 'platform/ imports none of the other layers';
    case 'read-side':
      if (toLayer === 'platform' || toLayer === 'read-side') return null;
      if (toLayer === 'write-side' && vocabulary) return null;
      return 'read-side/ imports platform/ and, from write-side/, only event types and pure rules';
    case 'write-side':
      if (toLayer === 'platform' || toLayer === 'write-side') return null;
      if (toLayer === 'read-side' && (isReadQueries(to) || isResponseSchema(to))) return null;
      return 'write-side/ imports platform/ and read-side/ queries and response schemas';
    case 'projections':
      if (toLayer === 'platform' || toLayer === 'projections') return null;
      if (toLayer === 'read-side' && !isRoutes(to)) return null;
      if (toLayer === 'write-side' && vocabulary) return null;
      return 'projections/ import platform/, read-side/ tables and, from write-side/, event types and pure rules';
    case 'processes':
    case 'smtp': {
      if (toLayer === 'platform' || toLayer === fromLayer) {
        const own = processOf(from);
        const target = processOf(to);
        if (target !== null && target !== own)
          return own === null
            ? "a shared module of processes/ imports no process's folder"
            : "a process imports no other process's folder (shared code lives in a top-level module of processes/ or lower)";
        return null;
      }
      if (toLayer === 'processes' && fromLayer === 'smtp')
        return processOf(to) === null ? null : "smtp/ imports no process's folder";
      if (toLayer === 'read-side' && isReadQueries(to)) return null;
      if (toLayer === 'write-side' && (vocabulary || isCommands(to))) return null;
      return `${fromLayer}/ imports platform/, read-side/ queries and write-side/ commands, event types and pure rules`;
    }
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
  for (const [from, source] of sources) {
    if (layerOf(from) === 'free') continue;
    const { files, packages, strings } = edgesOf(from, source);
    for (const edge of files) {
      const rule = judge(from, source, edge);
      if (rule) found.push({ from, to: edge.to, rule });
    }
    const ioFree = isDecider(from, source) || isPureRule(from) || isEvents(from);
    for (const p of packages)
      if (ioFree && !p.typeOnly && IO_PACKAGES.has(p.to))
        found.push({
          from,
          to: `package:${p.to}`,
          rule: 'a decider, pure rule or events module does no I/O',
        });
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

/** Every .ts file of the repository by relative path (node_modules, data and dot-folders left out). */
export function repositorySources(root: string): Map<string, string> {
  const sources = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules' || entry.name === 'data') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
        sources.set(relative(root, path).split('\\').join('/'), readFileSync(path, 'utf8'));
    }
  };
  walk(root);
  return sources;
}

export const repositoryRoot = join(dirname(new URL(import.meta.url).pathname), '..', '..');
