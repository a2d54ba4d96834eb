import { z } from 'zod';

const counts = {
  messages: z.int().meta({ description: 'Messages the reporter saw from the domain.' }),
  dmarc_pass: z.int().meta({ description: 'Of them, passing DMARC: DKIM or SPF passed and aligned.' }),
  dkim_aligned: z.int().meta({ description: 'DKIM passed with the From domain (aligned).' }),
  spf_aligned: z.int().meta({ description: 'SPF passed with the From domain (aligned).' }),
};

const DmarcSource = z.strictObject({
  ip: z.string(),
  ...counts,
  postline: z.boolean().meta({
    description:
      "Whether the address is one Postline sends from (`POSTLINE_OUTBOUND_IPS`): if not, it is another of the domain's senders, or someone using its name.",
  }),
});

const DmarcReportDay = z.strictObject({
  object: z.literal('dmarc_report_day'),
  reporter: z.string().meta({ description: "The report's `org_name`, e.g. `google.com`." }),
  reporter_email: z.string(),
  day: z.iso.date().meta({ description: 'The UTC day the reports cover.' }),
  reports: z.int().meta({ description: "The reporter's reports for the day, summed here." }),
  ...counts,
  dkim_pass: z.int().meta({ description: 'DKIM passed, aligned or not.' }),
  spf_pass: z.int().meta({ description: 'SPF passed, aligned or not.' }),
  sources: z.array(DmarcSource).meta({ description: 'Sending addresses, most messages first.' }),
});

export const DmarcReportList = z
  .strictObject({ object: z.literal('list'), data: z.array(DmarcReportDay) })
  .meta({
    id: 'DmarcReportList',
    description: "The domain's DMARC aggregate reports per reporter and day, newest day first (at most 400).",
    example: {
      object: 'list',
      data: [
        {
          object: 'dmarc_report_day',
          reporter: 'google.com',
          reporter_email: 'noreply-dmarc-support@google.com',
          day: '2026-11-25',
          reports: 1,
          messages: 124,
          dmarc_pass: 120,
          dkim_pass: 120,
          dkim_aligned: 120,
          spf_pass: 120,
          spf_aligned: 0,
          sources: [
            {
              ip: '192.0.2.10',
              messages: 120,
              dmarc_pass: 120,
              dkim_aligned: 120,
              spf_aligned: 0,
              postline: true,
            },
            {
              ip: '198.51.100.23',
              messages: 4,
              dmarc_pass: 0,
              dkim_aligned: 0,
              spf_aligned: 0,
              postline: false,
            },
          ],
        },
      ],
    },
  });
