// A thin typed wrapper over the Durable Object's synchronous SQLite API, and the `sql` tag that writes a
// statement with each value beside its placeholder:
//   db.all<Row>(sql`SELECT … WHERE a = ${x} AND b IN ${list(ids)} AND ${fromClause(readableWhere(caller, "c"))}`)
// A value becomes one bound parameter, a list() one JSON parameter read with json_each (Durable Object
// SQLite refuses more than 100 bound parameters in a statement), and an embedded fragment (sql`…`, or a
// read rule's [clause, ...args] through fromClause) keeps its own values in place, so no statement
// depends on counting positions.

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

/** A piece of SQL with its values, in the order of its placeholders. Built by `sql`; embeddable in another. */
export class Sql {
  constructor(
    readonly text: string,
    readonly values: readonly unknown[],
  ) {}
}

/** A list of values bound as one JSON parameter (see `list`). */
class SqlList {
  constructor(readonly items: readonly unknown[]) {}
}

/** `IN ${list(ids)}`: the values as one JSON parameter, `(SELECT value FROM json_each(?))`; any length. */
export const list = (items: readonly unknown[]): SqlList => new SqlList(items);

/** The tag: values become placeholders, lists one JSON parameter, embedded fragments keep their own values. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  let text = strings[0];
  const bound: unknown[] = [];
  values.forEach((value, i) => {
    if (value instanceof Sql) {
      text += value.text;
      bound.push(...value.values);
    } else if (value instanceof SqlList) {
      text += "(SELECT value FROM json_each(?))";
      bound.push(JSON.stringify(value.items));
    } else {
      text += "?";
      bound.push(value);
    }
    text += strings[i + 1];
  });
  return new Sql(text, bound);
}

/** A clause in the `[text, ...args]` form the read rules return (src/access), as an embeddable fragment. */
export const fromClause = ([text, ...args]: readonly [string, ...unknown[]] | readonly unknown[]): Sql =>
  new Sql(String(text), args);

/** A statement as `sql` builds it, or as text with positional arguments. */
type Statement = [query: Sql] | [query: string, ...args: unknown[]];

const statement = ([query, ...args]: Statement): [string, SqlValue[]] =>
  query instanceof Sql ? [query.text, bind([...query.values])] : [query, bind(args)];

export class Db {
  constructor(readonly sql: SqlStorage) {}

  all<T>(...query: Statement): T[] {
    const [text, args] = statement(query);
    return objects(this.sql.exec(text, ...args)) as T[];
  }

  first<T>(...query: Statement): T | null {
    return (this.all<T>(...query)[0] as T | undefined) ?? null;
  }

  /**
   * Execute a statement. Returns nothing on purpose: the cursor's rowsWritten counts index writes
   * too, so it cannot tell how many rows changed. Use `... RETURNING` with `all` when that matters.
   */
  run(...query: Statement): void {
    const [text, args] = statement(query);
    this.sql.exec(text, ...args);
  }
}
