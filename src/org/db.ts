// A thin typed wrapper over the Durable Object's synchronous SQLite API.

export type SqlValue = string | number | null | ArrayBuffer;

const bind = (args: unknown[]): SqlValue[] =>
  args.map((a) => (a === undefined ? null : typeof a === "boolean" ? (a ? 1 : 0) : (a as SqlValue)));

export class Db {
  constructor(readonly sql: SqlStorage) {}

  all<T>(query: string, ...args: unknown[]): T[] {
    return this.sql.exec(query, ...bind(args)).toArray() as T[];
  }

  first<T>(query: string, ...args: unknown[]): T | null {
    const rows = this.sql.exec(query, ...bind(args)).toArray();
    return (rows[0] as T | undefined) ?? null;
  }

  /**
   * Execute a statement. Returns nothing on purpose: the cursor's rowsWritten counts index writes
   * too, so it cannot tell how many rows changed. Use `... RETURNING` with `all` when that matters.
   */
  run(query: string, ...args: unknown[]): void {
    this.sql.exec(query, ...bind(args));
  }
}
