// A thin typed wrapper over the Durable Object's synchronous SQLite API.

export type SqlValue = string | number | null | ArrayBuffer;

const bind = (args: unknown[]): SqlValue[] =>
  args.map((a) => (a === undefined ? null : typeof a === "boolean" ? (a ? 1 : 0) : (a as SqlValue)));

/**
 * A cursor's rows as objects, built here from its raw rows (what toArray returns, the same keys in
 * the same order, a later column of the same name winning). toArray builds each object in the
 * runtime, about 3 µs per row of a dozen columns; this is about a third of that, and compile reads ~300 rows and search
 * up to 1,000 per request.
 */
function objects(cursor: SqlStorageCursor<Record<string, SqlStorageValue>>): Record<string, SqlStorageValue>[] {
  const names = cursor.columnNames;
  const out: Record<string, SqlStorageValue>[] = [];
  for (const row of cursor.raw()) {
    const o: Record<string, SqlStorageValue> = {};
    for (let i = 0; i < names.length; i++) o[names[i]] = row[i];
    out.push(o);
  }
  return out;
}

export class Db {
  constructor(readonly sql: SqlStorage) {}

  all<T>(query: string, ...args: unknown[]): T[] {
    return objects(this.sql.exec(query, ...bind(args))) as T[];
  }

  first<T>(query: string, ...args: unknown[]): T | null {
    return (objects(this.sql.exec(query, ...bind(args)))[0] as T | undefined) ?? null;
  }

  /**
   * Execute a statement. Returns nothing on purpose: the cursor's rowsWritten counts index writes
   * too, so it cannot tell how many rows changed. Use `... RETURNING` with `all` when that matters.
   */
  run(query: string, ...args: unknown[]): void {
    this.sql.exec(query, ...bind(args));
  }
}
