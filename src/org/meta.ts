// org_meta: small named values an organization's Durable Object keeps (its org id, background cursors).
import type { Db } from "../sql/db";

export const getMeta = (db: Db, name: string): string | undefined =>
  db.first<{ value: string }>("SELECT value FROM org_meta WHERE name = ?", name)?.value;

export const setMeta = (db: Db, name: string, value: string): void =>
  db.run(
    "INSERT INTO org_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    name,
    value,
  );

export const deleteMeta = (db: Db, name: string): void => db.run("DELETE FROM org_meta WHERE name = ?", name);
