import { describe, expect, it } from 'vitest';
import { migrate } from '../../platform/db/migrations.ts';
import {
  forgetPersonalData,
  forgetPersonalDataByPrefix,
  openPersonalData,
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
      const opened = await Promise.all(sealed.map((s, n) => openPersonalData(db, `con_${n}`, s)));
      expect(opened).toEqual(items.map((i) => i.value));
      expect(await openPersonalData(db, 'con_0', before)).toEqual({ n: 0 });
      const ivs = sealed.map((s) => s.split('.')[1]);
      expect(new Set(ivs).size).toBe(items.length);
      const { rows } = await db.query<{ key: string }>(
        "SELECT encode(key, 'hex') AS key FROM personal_data_keys",
      );
      expect(new Set(rows.map((r) => r.key)).size).toBe(items.length);
    } finally {
      await dispose();
    }
  });
});
