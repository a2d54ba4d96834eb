import { XMLParser } from 'fast-xml-parser';
import { storableText } from '../../platform/storable-text.ts';
import { UnreadableReport } from './report-archive.ts';

/** One row of an aggregate report: the mail seen from one source IP, as the reporter judged it. */
export interface DmarcRecord {
  sourceIp: string;
  count: number;
  headerFrom: string;
  disposition: string;
  /** policy_evaluated: DKIM and SPF passed *and* aligned with the From domain (what DMARC decides by). */
  dkimAligned: boolean;
  spfAligned: boolean;
  /** auth_results: some DKIM signature, or SPF for the envelope domain, passed, aligned or not. */
  dkimPass: boolean;
  spfPass: boolean;
}

/** What Postline keeps of a report (RFC 7489 appendix C): the summary, never the XML. */
export interface DmarcReport {
  reporter: string;
  reporterEmail: string;
  reportId: string;
  /** policy_published/domain: the domain the report is about. */
  domain: string;
  begin: string;
  end: string;
  policy: string;
  records: DmarcRecord[];
}

/** Rows one report may carry: more is not a report a receiver sends about one domain for one day. */
export const MAX_RECORDS = 10_000;

const parser = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  processEntities: false,
});

type Node = Record<string, unknown>;
const node = (v: unknown): Node => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Node) : {});
/** Text a report may hold in one field: a reporter's name, an id, an address. */
const FIELD_CHARS = 255;
/**
 * A field's text as the read model can store it: anyone may mail a report, and a NUL unpacked from its archive
 * would fail the projection's INSERT on every retry (and park every later report for the domain behind it).
 */
const str = (v: unknown) =>
  typeof v === 'string' || typeof v === 'number' ? storableText(String(v), FIELD_CHARS).trim() : '';
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);
const isIp = (s: string) => /^[0-9a-f:.]{2,45}$/i.test(s) && (s.includes('.') || s.includes(':'));

function required(value: string, what: string): string {
  if (!value) throw new UnreadableReport(`report without ${what}`);
  return value;
}

function seconds(v: unknown, what: string): string {
  const n = Number(required(str(v), what));
  if (!Number.isInteger(n) || n < 0 || n > 1e11) throw new UnreadableReport(`report with a bad ${what}`);
  return new Date(n * 1000).toISOString();
}

/** Parses an aggregate report's XML; refuses (UnreadableReport) what is not one. Entities are not expanded. */
export function parseDmarcReport(xml: string): DmarcReport {
  if (/<!ENTITY/i.test(xml)) throw new UnreadableReport('report declares entities');
  let doc: Node;
  try {
    doc = node(parser.parse(xml));
  } catch (e) {
    throw new UnreadableReport(`report not XML: ${(e as Error).message}`);
  }
  const feedback = node(doc.feedback);
  const meta = node(feedback.report_metadata);
  const range = node(meta.date_range);
  const policy = node(feedback.policy_published);
  const records = list(feedback.record);
  if (records.length > MAX_RECORDS) throw new UnreadableReport('report with too many records');
  return {
    reporter: required(str(meta.org_name), 'org_name'),
    reporterEmail: str(meta.email),
    reportId: required(str(meta.report_id), 'report_id'),
    domain: required(str(policy.domain), 'policy_published domain').toLowerCase(),
    begin: seconds(range.begin, 'date_range begin'),
    end: seconds(range.end, 'date_range end'),
    policy: str(policy.p) || 'none',
    records: records.map((r) => recordOf(node(r))),
  };
}

function recordOf(r: Node): DmarcRecord {
  const row = node(r.row);
  const evaluated = node(row.policy_evaluated);
  const auth = node(r.auth_results);
  const sourceIp = str(row.source_ip);
  if (!isIp(sourceIp)) throw new UnreadableReport('record with a bad source_ip');
  const count = Number(str(row.count));
  if (!Number.isSafeInteger(count) || count < 0) throw new UnreadableReport('record with a bad count');
  const passed = (results: unknown[]) => results.some((x) => str(node(x).result).toLowerCase() === 'pass');
  return {
    sourceIp: sourceIp.toLowerCase(),
    count,
    headerFrom: str(node(r.identifiers).header_from).toLowerCase(),
    disposition: str(evaluated.disposition) || 'none',
    dkimAligned: str(evaluated.dkim).toLowerCase() === 'pass',
    spfAligned: str(evaluated.spf).toLowerCase() === 'pass',
    dkimPass: passed(list(auth.dkim)),
    spfPass: passed(list(auth.spf)),
  };
}
