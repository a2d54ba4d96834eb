import type { LookUps } from '../platform/services.ts';
import { findAudience } from '../read-side/audiences/audiences.queries.ts';
import { findDomainById, findSendingDomain } from '../read-side/domains/domains.queries.ts';
import { isSuppressed, smallSuppressionList } from '../read-side/suppressions/suppressions.queries.ts';
import { findPublishedVersion } from '../read-side/templates/templates.queries.ts';
import { findTopic } from '../read-side/topics/topics.queries.ts';

/** The read-side query functions the write side is given (write-side/look-ups.ts declares what each must be). */
export const lookUps: LookUps = {
  findTopic,
  findSendingDomain,
  findDomainById,
  isSuppressed,
  smallSuppressionList,
  findPublishedVersion,
  findAudience,
};
