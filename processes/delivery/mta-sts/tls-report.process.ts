import { buildTlsReport, parseTlsRptRecord, type TlsCount } from '../../../domain/delivery/tls-report.ts';
import { smtpHostname } from '../../../platform/config.ts';
import { createResolver, isNoAnswer } from '../../../platform/dns.ts';
import type { Services } from '../../../platform/services.ts';
import { ProcessManager } from '../../process.ts';
import { configuredMta, configuredMtaSts } from '../destination-shaping.ts';
import type { DkimKey } from '../mta/message.ts';
import type { OutboundMta } from '../mta/outbound.ts';
import { outboundCa } from './mta-sts.ts';
import { gzippedReport, type ReportToSend, reportMessage } from './report-mail.ts';
import { postReport } from './report-post.ts';

/** A claimed report is another process's for this long; one that failed is tried again an hour later. */
const CLAIM_MS = 10 * 60_000;
const RETRY_MS = 3600_000;
const MAX_ATTEMPTS = 10;
/** Reports are sent for days up to a week back (a process that was down catches up); counts are kept a month. */
const CATCH_UP_DAYS = 7;
const KEEP_DAYS = 31;
const SEND_WITHIN_MS = 60_000;

type Due = { day: string; domain: string };

/**
 * The daily TLS reports (RFC 8460): once a UTC day is over, each domain that had sessions that day and publishes
 * `_smtp._tls` gets the day's report at its `rua` (mailto: through this MTA, https: as a POST). One process sends
 * each report (a claim in `tls_reports`); a failed one is tried again hourly, at most ten times.
 */
export class TlsReportProcess extends ProcessManager {
  readonly #services: Services;
  readonly #resolver;
  #mta?: OutboundMta;

  constructor(services: Services) {
    super(services, { name: 'tls-reports', everyMs: 10 * 60_000 });
    this.#services = services;
    this.#resolver = createResolver(services.config.DNS_SERVERS);
  }

  /** Sends the reports of the days over; resolves with how many were sent. */
  protected async work(): Promise<number> {
    if (!this.#services.config.MTA_STS) return 0;
    const { db, clock, log } = this.#services;
    const now = clock.now();
    const today = now.toISOString().slice(0, 10);
    await db.query('DELETE FROM tls_report_counts WHERE day < $1::date - $2::int', [today, KEEP_DAYS]);
    await db.query('DELETE FROM tls_reports WHERE day < $1::date - $2::int', [today, KEEP_DAYS]);
    let sent = 0;
    // Every report due now, a hundred at a time: a big installation has a report row per destination domain.
    for (
      let rows = await this.#due(now);
      rows.length > 0 && !this.stopping.aborted;
      rows = await this.#due(now)
    )
      for (const due of rows) {
        if (!(await this.#claim(due))) continue;
        try {
          sent += await this.#send(due);
          await this.#finish(due, { sentAt: clock.now(), error: null });
        } catch (err) {
          log.warn(
            { domain: due.domain, day: due.day, reason: (err as Error).message },
            'TLS report not sent',
          );
          await this.#finish(due, {
            retryAt: new Date(clock.now().getTime() + RETRY_MS),
            error: err as Error,
          });
        }
      }
    return sent;
  }

  /** Days over (up to a week back) with counts and no report sent, claimed by no one or tried again now. */
  async #due(now: Date): Promise<Due[]> {
    const { rows } = await this.#services.db.query<Due>(
      `SELECT DISTINCT c.day::text AS day, c.domain FROM tls_report_counts c
       LEFT JOIN tls_reports r ON r.day = c.day AND r.domain = c.domain
       WHERE c.day < $1::date AND c.day >= $1::date - $2::int
         AND (r.day IS NULL OR (r.sent_at IS NULL AND r.attempts < $3 AND r.claimed_until < $4))
       ORDER BY 1, 2 LIMIT 100`,
      [now.toISOString().slice(0, 10), CATCH_UP_DAYS, MAX_ATTEMPTS, now],
    );
    return rows;
  }

  async #claim(due: Due): Promise<boolean> {
    const now = this.#services.clock.now();
    const { rowCount } = await this.#services.db.query(
      `INSERT INTO tls_reports AS r (day, domain, claimed_until, attempts) VALUES ($1, $2, $3, 1)
       ON CONFLICT (day, domain) DO UPDATE SET claimed_until = excluded.claimed_until, attempts = r.attempts + 1
       WHERE r.sent_at IS NULL AND r.claimed_until < $4`,
      [due.day, due.domain, new Date(now.getTime() + CLAIM_MS), now],
    );
    return rowCount > 0;
  }

  async #finish(due: Due, o: { sentAt?: Date; retryAt?: Date; error: Error | null }): Promise<void> {
    await this.#services.db.query(
      `UPDATE tls_reports SET sent_at = $3, claimed_until = coalesce($4, claimed_until), last_error = $5
       WHERE day = $1 AND domain = $2`,
      [due.day, due.domain, o.sentAt ?? null, o.retryAt ?? null, o.error?.message ?? null],
    );
  }

  /** 1 when the report went to at least one rua, 0 when the domain asks for none; throws when every rua failed. */
  async #send(due: Due): Promise<number> {
    let records: string[][] = [];
    try {
      records = await this.#resolver.resolveTxt(`_smtp._tls.${due.domain}`);
    } catch (err) {
      if (!isNoAnswer(err)) throw err;
    }
    const ruas = parseTlsRptRecord(records);
    if (ruas.length === 0) return 0;
    const report = await this.#report(due);
    const failures: string[] = [];
    for (const rua of ruas) {
      try {
        if (rua.kind === 'mailto') await this.#mail(report, rua.address);
        else await postReport(rua.url, gzippedReport(report), this.#httpOptions());
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    if (failures.length === ruas.length) throw new Error(failures.join('; '));
    return 1;
  }

  async #report(due: Due): Promise<ReportToSend> {
    const { rows } = await this.#services.db.query<{
      policy_type: TlsCount['policyType'];
      policy_text: string;
      mx_patterns: string[];
      result_type: string;
      receiving_mx: string;
      sessions: string;
    }>(
      `SELECT policy_type, policy_text, mx_patterns, result_type, receiving_mx, sessions FROM tls_report_counts
       WHERE day = $1 AND domain = $2 ORDER BY policy_type DESC, policy_text, result_type, receiving_mx`,
      [due.day, due.domain],
    );
    const counts: TlsCount[] = rows.map((r) => ({
      policyType: r.policy_type,
      policyText: r.policy_text,
      mxPatterns: r.mx_patterns,
      resultType: (r.result_type || null) as TlsCount['resultType'],
      receivingMx: r.receiving_mx,
      sessions: Number(r.sessions),
    }));
    const submitter = smtpHostname(this.#services.config);
    const reportId = `${due.day}.${due.domain}@${submitter}`;
    const report = buildTlsReport({
      day: due.day,
      policyDomain: due.domain,
      organizationName: submitter,
      contactInfo: this.#from(),
      reportId,
      counts,
    });
    return { day: due.day, domain: due.domain, submitter, reportId, report };
  }

  async #mail(report: ReportToSend, to: string): Promise<void> {
    this.#mta ??= configuredMta(this.#services, { mtaSts: configuredMtaSts(this.#services) });
    const message = await reportMessage(report, this.#from(), to, this.#dkim());
    const [outcome] = await this.#mta.send(message, [to], { withinMs: SEND_WITHIN_MS });
    if (outcome.result !== 'delivered') throw new Error(`${to}: ${outcome.smtpResponse}`);
  }

  #from(): string {
    return this.#services.config.TLSRPT_FROM ?? `postmaster@${smtpHostname(this.#services.config)}`;
  }

  /** The operator's key for the reports' From domain (TLSRPT_DKIM_*); null when none is configured. */
  #dkim(): DkimKey | null {
    const { tlsrptDkimKey: privateKey, TLSRPT_DKIM_SELECTOR: keySelector } = this.#services.config;
    if (!privateKey || !keySelector) return null;
    return { domainName: this.#from().split('@')[1].toLowerCase(), keySelector, privateKey };
  }

  #httpOptions() {
    const { config } = this.#services;
    return {
      resolver: this.#resolver,
      ca: outboundCa(config),
      timeoutMs: SEND_WITHIN_MS,
      privateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    };
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.#mta?.close();
  }
}
