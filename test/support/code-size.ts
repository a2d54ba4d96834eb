import ts from 'typescript';

/** The size rules of production code (docs/CONTRIBUTING.md, "Rules"): small files, short functions in domain/. */
export const MAX_FILE_LINES = 300;
export const MAX_DOMAIN_FUNCTION_LINES = 60;
/** The MX is routing only: each kind of recipient is handled in a file of its own. */
export const MAX_MX_LINES = 100;

/** Folders of hand-written production code; generated code (sdk/generated/, dashboard/dist/) is not checked. */
const PRODUCTION =
  /^(platform|domain|read-side|write-side|projections|processes|smtp|bin|dashboard\/src|sdk\/src)\//;

const lineCount = (source: string) => source.replace(/\n$/, '').split('\n').length;

/** Every rule a set of files breaks, as `<file>: <what>`. */
export function sizeViolations(sources: Map<string, string>): string[] {
  const found: string[] = [];
  for (const [file, source] of sources) {
    if (!PRODUCTION.test(file)) continue;
    const lines = lineCount(source);
    if (lines > MAX_FILE_LINES) found.push(`${file}: ${lines} lines (at most ${MAX_FILE_LINES})`);
    if (file === 'smtp/mx.ts' && lines > MAX_MX_LINES)
      found.push(`${file}: ${lines} lines (at most ${MAX_MX_LINES})`);
    if (file.startsWith('domain/')) for (const f of longFunctions(file, source)) found.push(`${file}: ${f}`);
  }
  return found;
}

/** The functions of a file longer than MAX_DOMAIN_FUNCTION_LINES, as `<name> (<lines> lines)`. */
function longFunctions(file: string, source: string): string[] {
  const sf = ts.createSourceFile(
    file,
    source,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const long: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > MAX_DOMAIN_FUNCTION_LINES) long.push(`${nameOf(node, sf)} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return long;
}

function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)))
    return parent.name.getText(sf);
  return `function at line ${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`;
}
