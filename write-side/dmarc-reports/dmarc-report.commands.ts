import { dmarcReportDecider } from '../../domain/dmarc/dmarc-report.decider.ts';
import { dmarcReportStream } from '../../domain/dmarc/dmarc-report.events.ts';
import type { DmarcReport } from '../../domain/dmarc/dmarc-report.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';

/**
 * Records a DMARC aggregate report for a domain (`DmarcReportReceived`); a report recorded before (same reporter
 * and report id) is not recorded again. Resolves with whether it was new, once committed.
 */
export async function recordDmarcReport(
  services: Pick<Services, 'store' | 'clock'>,
  domain: { id: string; orgId: string; mode: Mode },
  report: DmarcReport,
  actor: string,
): Promise<boolean> {
  const { events } = await handleCommand(
    services.store,
    dmarcReportStream(domain.id),
    dmarcReportDecider,
    {
      type: 'RecordDmarcReport',
      report: {
        domainId: domain.id,
        orgId: domain.orgId,
        mode: domain.mode,
        receivedAt: services.clock.now().toISOString(),
        report,
      },
    },
    { orgId: domain.orgId, mode: domain.mode, actor },
  );
  return events.length > 0;
}
