import { describe, expect, it } from 'vitest';
import { migrate } from '../../platform/db/migrations.ts';
import {
  forgetPersonalData,
  forgetPersonalDataByPrefix,
  openPersonalData,
  openPersonalDataMany,
  PersonalDataForgottenError,
  personalDataMigrations,
  sealPersonalData,
  sealPersonalDataMany,
} from '../../platform/personal-data.ts';
import { openTestDatabase } from '../support/databases.ts';

describe('personal data sealed per subject', () => {
  it('opens what it sealed until the subject is forgotten; never for another subject', async () => {
    const { db, dispose } = await openTestDatabase();
    try {
      await migrate(db, personalDataMigrations);
      const value = { email: 'ann@example.org', firstName: 'Ann' };
      const sealed = await sealPersonalData(db, 'con_1', value);
      expect(sealed).not.toContain('ann@');
      expect(await openPersonalData(db, 'con_1', sealed)).toEqual(value);
      // Sealed for con_1: the key of another subject does not open it (the subject is part of what is signed).
      await sealPersonalData(db, 'con_2', {});
      await expect(openPersonalData(db, 'con_2', sealed)).rejects.toThrow();
      await forgetPersonalData(db, 'con_1');
      expect(await openPersonalData(db, 'con_1', sealed)).toBeNull();
      // By prefix: every subject named so, and no other (`client:org_1:` is not `client:org_12:`).
      const kept = await sealPersonalData(db, 'client:org_12:em_3', value);
      const gone = await sealPersonalData(db, 'client:org_1:em_1', value);
      await sealPersonalData(db, 'client:org_1:em_2', value);
      expect(await forgetPersonalDataByPrefix(db, 'client:org_1:')).toBe(2);
      expect(await openPersonalData(db, 'client:org_1:em_1', gone)).toBeNull();
      expect(await openPersonalData(db, 'client:org_12:em_3', kept)).toEqual(value);
    } finally {
      await dispose();
    }
  });

  it('seals many at once, each with a key and an IV of its own; a subject with a key keeps it', async () => {
    const { db, dispose } = await openTestDatabase();
    try {
      await migrate(db, personalDataMigrations);
      const before = await sealPersonalData(db, 'con_0', { n: 0 });
      const items = Array.from({ length: 50 }, (_, n) => ({ subject: `con_${n}`, value: { n } }));
      const sealed = await sealPersonalDataMany(db, items);
      const opened = await Promise.all(sealed.map((s, n) => openPersonalData(db, `con_${n}`, s!)));
      expect(opened).toEqual(items.map((i) => i.value));
      expect(await openPersonalData(db, 'con_0', before)).toEqual({ n: 0 });
      const ivs = sealed.map((s) => s!.split('.')[1]);
      expect(new Set(ivs).size).toBe(items.length);
      const { rows } = await db.query<{ key: string }>(
        "SELECT encode(key, 'hex') AS key FROM personal_data_keys",
      );
      expect(new Set(rows.map((r) => r.key)).size).toBe(items.length);
    } finally {
      await dispose();
    }
  });

  it('never gives a forgotten subject a key again: sealing is refused, and what it had reads as forgotten', async () => {
    const { db, dispose } = await openTestDatabase();
    try {
      await migrate(db, personalDataMigrations);
      const keys = async (subject: string) =>
        (await db.query('SELECT 1 FROM personal_data_keys WHERE subject = $1 AND key IS NOT NULL', [subject]))
          .rowCount;
      const sealed = await sealPersonalData(db, 'con_1', { n: 1 });
      await forgetPersonalData(db, 'con_1');
      await forgetPersonalData(db, 'con_1'); // again: still forgotten
      await expect(sealPersonalData(db, 'con_1', { n: 2 })).rejects.toThrow(PersonalDataForgottenError);
      expect(await sealPersonalDataMany(db, [{ subject: 'con_1', value: { n: 3 } }])).toEqual([null]);
      expect(await keys('con_1')).toBe(0);
      expect(await openPersonalData(db, 'con_1', sealed)).toBeNull();
      expect(await openPersonalDataMany(db, [{ subject: 'con_1', sealed }])).toEqual([null]);
      // Forgotten before anything was sealed for it (a delete that won a race with the first seal): the same.
      await forgetPersonalData(db, 'con_2');
      await expect(sealPersonalData(db, 'con_2', {})).rejects.toThrow(PersonalDataForgottenError);
      // In a batch, the others are sealed all the same.
      const many = await sealPersonalDataMany(db, [
        { subject: 'con_2', value: {} },
        { subject: 'con_3', value: { n: 3 } },
      ]);
      expect(many[0]).toBeNull();
      expect(await openPersonalData(db, 'con_3', many[1]!)).toEqual({ n: 3 });
      // By prefix, likewise.
      const client = await sealPersonalData(db, 'client:org_1:em_1', { ip: '192.0.2.1' });
      expect(await forgetPersonalDataByPrefix(db, 'client:org_1:')).toBe(1);
      expect(await forgetPersonalDataByPrefix(db, 'client:org_1:')).toBe(0);
      await expect(sealPersonalData(db, 'client:org_1:em_1', {})).rejects.toThrow(PersonalDataForgottenError);
      expect(await openPersonalData(db, 'client:org_1:em_1', client)).toBeNull();
      expect(await keys('client:org_1:em_1')).toBe(0);
    } finally {
      await dispose();
    }
  });
});
