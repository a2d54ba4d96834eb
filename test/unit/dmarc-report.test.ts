import { readFileSync } from 'node:fs';
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseDmarcReport } from '../../domain/dmarc/dmarc-report.ts';
import { UnreadableReport, unpackReport } from '../../domain/dmarc/report-archive.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/dmarc/${name}`, import.meta.url));
const GOOGLE_ZIP = 'google.com!acme-dmarc.test!1795564800!1795651199.zip';
const MICROSOFT_GZ = 'enterprise.protection.outlook.com!acme-dmarc.test!1795651200!1795737600.xml.gz';
const YAHOO_GZ = 'yahoo.com!acme-dmarc.test!1795737600!1795823999.xml.gz';

/** A one-file zip as some reporters write it: sizes left out of the local header (bit 3, data descriptor). */
function zipWithDescriptor(name: string, content: Buffer): Buffer {
  const data = deflateRawSync(content);
  const nameBytes = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 6);
  local.writeUInt16LE(8, 8);
  local.writeUInt16LE(nameBytes.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc32(content), 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(nameBytes.length, 28);
  central.writeUInt32LE(0, 42);
  const descriptor = Buffer.alloc(16);
  const centralAt = local.length + nameBytes.length + data.length + descriptor.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBytes.length, 12);
  end.writeUInt32LE(centralAt, 16);
  return Buffer.concat([local, nameBytes, data, descriptor, central, nameBytes, end]);
}

describe('DMARC aggregate reports: unpacking', () => {
  it('reads the zip written by the zip tool, gzip and plain XML alike', () => {
    const xml = fixture('google.xml').toString();
    expect(unpackReport(fixture(GOOGLE_ZIP))).toBe(xml);
    expect(unpackReport(gzipSync(xml))).toBe(xml);
    expect(unpackReport(Buffer.from(xml))).toBe(xml);
    expect(unpackReport(fixture(MICROSOFT_GZ))).toBe(fixture('microsoft.xml').toString());
  });

  it('reads a zip whose local header defers its sizes to a data descriptor', () => {
    const xml = fixture('yahoo.xml');
    expect(unpackReport(zipWithDescriptor('report.xml', xml))).toBe(xml.toString());
  });

  it('refuses a report bigger than the limit once inflated, whatever its packaging', () => {
    const big = Buffer.from(`<feedback>${' '.repeat(2000)}</feedback>`);
    expect(() => unpackReport(gzipSync(big), 1000)).toThrow(UnreadableReport);
    expect(() => unpackReport(zipWithDescriptor('r.xml', big), 1000)).toThrow(UnreadableReport);
    expect(() => unpackReport(big, 1000)).toThrow(UnreadableReport);
  });

  it('refuses what is not a report without throwing anything else', () => {
    const zip = fixture(GOOGLE_ZIP);
    // The same zip claiming bzip2 (method 12) in its central directory.
    const bzip2 = Buffer.from(zip);
    bzip2.writeUInt16LE(12, bzip2.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])) + 10);
    for (const bad of [
      Buffer.alloc(0),
      Buffer.from('PK'),
      Buffer.from('hello'),
      Buffer.from([0x1f, 0x8b, 1, 2, 3]),
      zip.subarray(0, 60),
      zip.subarray(0, zip.length - 10),
      Buffer.concat([zip.subarray(0, 90), Buffer.alloc(40, 0xff), zip.subarray(130)]),
      bzip2,
    ])
      expect(() => unpackReport(bad)).toThrow(UnreadableReport);
  });
});

describe('DMARC aggregate reports: parsing', () => {
  it("reads Google's report: reporter, day, policy and each source with its results", () => {
    const report = parseDmarcReport(unpackReport(fixture(GOOGLE_ZIP)));
    expect(report).toMatchObject({
      reporter: 'google.com',
      reporterEmail: 'noreply-dmarc-support@google.com',
      reportId: '4861092377154612893',
      domain: 'acme-dmarc.test',
      begin: '2026-11-25T00:00:00.000Z',
      policy: 'none',
    });
    expect(report.records).toEqual([
      {
        sourceIp: '192.0.2.10',
        count: 120,
        headerFrom: 'acme-dmarc.test',
        disposition: 'none',
        dkimAligned: true,
        spfAligned: false,
        dkimPass: true,
        spfPass: true,
      },
      {
        sourceIp: '198.51.100.23',
        count: 4,
        headerFrom: 'acme-dmarc.test',
        disposition: 'none',
        dkimAligned: false,
        spfAligned: false,
        dkimPass: false,
        spfPass: false,
      },
    ]);
  });

  it("reads Microsoft's (namespaced, envelope identifiers) and Yahoo's reports", () => {
    const microsoft = parseDmarcReport(unpackReport(fixture(MICROSOFT_GZ)));
    expect(microsoft.reporter).toBe('Enterprise Outlook');
    expect(microsoft.records.map((r) => [r.sourceIp, r.count, r.spfAligned])).toEqual([
      ['192.0.2.10', 80, true],
      ['203.0.113.45', 12, false],
    ]);
    const yahoo = parseDmarcReport(unpackReport(fixture(YAHOO_GZ)));
    expect(yahoo).toMatchObject({ reporter: 'Yahoo', reportId: '1795824000.417294' });
    expect(yahoo.records[1]).toMatchObject({ dkimPass: true, dkimAligned: false, count: 15 });
  });

  it('refuses XML that is not an aggregate report, bad rows, and entity declarations', () => {
    const google = fixture('google.xml').toString();
    for (const bad of [
      '<html><body>hi</body></html>',
      '<feedback><report_metadata>',
      google.replace('<source_ip>192.0.2.10</source_ip>', '<source_ip>not an ip</source_ip>'),
      google.replace('<count>120</count>', '<count>-3</count>'),
      google.replace('<begin>1795564800</begin>', '<begin>yesterday</begin>'),
      `<!DOCTYPE feedback [<!ENTITY a "aaaa">]>${google.replace(/<\?xml[^>]*>/, '')}`,
    ])
      expect(() => parseDmarcReport(bad)).toThrow(UnreadableReport);
  });

  it('keeps what a store can hold of its text: a NUL from the archive dropped, each field cut to 255 characters', () => {
    const google = fixture('google.xml').toString();
    const xml = google
      .replace(/<org_name>[^<]*<\/org_name>/, '<org_name>evil\u0000corp</org_name>')
      .replace(/<report_id>[^<]*<\/report_id>/, `<report_id>${'r'.repeat(1000)}</report_id>`);
    const report = parseDmarcReport(unpackReport(gzipSync(Buffer.from(xml))));
    expect(report.reporter).toBe('evilcorp');
    expect(report.reportId).toBe('r'.repeat(255));
  });
});
