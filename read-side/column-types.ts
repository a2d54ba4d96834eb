import type { ColumnType } from 'kysely';

/** A timestamptz column: read as a Date, written as a Date or an ISO string (what events carry). */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** A json or jsonb column holding a `T`: read parsed, written as a `T` or as its JSON text. */
export type Json<T> = ColumnType<T, T | string, T | string>;
