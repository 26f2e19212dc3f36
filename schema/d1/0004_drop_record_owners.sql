-- Record ownership moved to the sharded IdRegistry Durable Objects (src/registry): nothing in D1 grows
-- with the number of records any more. Organizations re-register their ids from their outbox (org
-- migration 'record_owner_backfill').
DROP TABLE IF EXISTS record_owners;
