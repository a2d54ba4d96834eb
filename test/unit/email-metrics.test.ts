import { describe, expect, it } from 'vitest';
import { EMAIL_METRICS, type MetricCounts, metricValues, sumCounts } from '../../domain/emails/metrics.ts';

const counts = (over: Partial<MetricCounts> = {}): MetricCounts => ({
  received: 0,
  sent: 0,
  delivered: 0,
  delivery_delayed: 0,
  bounced: 0,
  bounced_permanent: 0,
  bounced_transient: 0,
  complained: 0,
  suppressed: 0,
  opened: 0,
  unique_opened: 0,
  clicked: 0,
  unique_clicked: 0,
  unsubscribed: 0,
  emails_delivered: 0,
  ...over,
});

describe('metricValues: the metrics of a group of emails', () => {
  it('gives the counts and the rates of what each is a share of, to four places', () => {
    const c = counts({
      received: 7,
      sent: 6,
      delivered: 3,
      bounced: 2,
      complained: 1,
      unique_opened: 1,
      unique_clicked: 2,
      unsubscribed: 1,
      emails_delivered: 3,
    });
    expect(metricValues(c, EMAIL_METRICS)).toMatchObject({
      received: 7,
      sent: 6,
      delivery_rate: 0.5,
      bounce_rate: 0.3333,
      complaint_rate: 0.3333,
      open_rate: 0.3333,
      click_rate: 0.6667,
      unsubscribed: 1,
      unsubscribe_rate: 0.3333,
    });
  });

  it('has a rate of nothing be 0, and gives only the metrics asked for, in the order of the list', () => {
    expect(metricValues(counts(), ['open_rate', 'delivery_rate', 'complaint_rate'])).toEqual({
      delivery_rate: 0,
      complaint_rate: 0,
      open_rate: 0,
    });
    expect(Object.keys(metricValues(counts(), ['bounce_rate', 'sent']))).toEqual(['sent', 'bounce_rate']);
  });
});

describe('sumCounts: the counts of several groups', () => {
  it('adds every count, and of no group is all zero', () => {
    expect(sumCounts([])).toEqual(counts());
    const row = { ...counts({ received: 2, opened: 3, emails_delivered: 1 }), period: new Date() };
    expect(sumCounts([row, counts({ received: 1, sent: 1 })])).toEqual(
      counts({ received: 3, sent: 1, opened: 3, emails_delivered: 1 }),
    );
  });
});
