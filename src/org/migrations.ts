// The org Durable Object's SQL schema as an append-only list. Never edit or reorder an entry that has
// shipped: add a new one. Applied in blockConcurrencyWhile at construction and recorded in _migrations.

export interface Migration {
  name: string;
  sql: string;
}

export const ORG_MIGRATIONS: readonly Migration[] = [
  {
    name: "0001_identity_events_audit_idempotency",
    sql: `
      CREATE TABLE principals (
        principal_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,                 -- 'agent' | 'human'
        display_name TEXT NOT NULL,
        role TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE api_keys (
        key_id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,
        principal_id TEXT NOT NULL REFERENCES principals(principal_id),
        label TEXT NOT NULL,
        scopes TEXT NOT NULL,               -- JSON array, ["*"] for all
        max_trust TEXT NOT NULL,
        status TEXT NOT NULL,               -- 'active' | 'revoked'
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE INDEX api_keys_by_principal ON api_keys(principal_id);
      CREATE TABLE operator_accounts (
        account_id TEXT PRIMARY KEY,
        principal_id TEXT NOT NULL UNIQUE REFERENCES principals(principal_id),
        username TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,        -- PBKDF2-SHA256, hex
        password_salt TEXT NOT NULL,
        temporary_password INTEGER NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE org_meta (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        actor_id TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        visibility TEXT NOT NULL,           -- visibility of the record it describes, for read filtering
        created_at TEXT NOT NULL
      );
      CREATE INDEX events_by_kind ON events(kind, seq);
      CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        audit_id TEXT NOT NULL UNIQUE,
        action TEXT NOT NULL,
        actor_id TEXT NOT NULL,
        key_id TEXT,
        resource_type TEXT NOT NULL,
        resource_id TEXT,
        request_id TEXT,
        detail TEXT NOT NULL,               -- JSON, metadata only
        created_at TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        entry_hash TEXT NOT NULL            -- sha256 over prev_hash + the entry: a tamper-evident chain
      );
      CREATE INDEX audit_by_action ON audit_log(action, seq);
      CREATE TABLE idempotency (
        idem_key TEXT PRIMARY KEY,
        request_hash TEXT NOT NULL,
        status INTEGER NOT NULL,
        response TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
    `,
  },
  {
    name: "0002_memory_loop",
    sql: `
      CREATE TABLE projects (
        project_id TEXT PRIMARY KEY,
        reference TEXT NOT NULL UNIQUE,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE observations (
        observation_id TEXT PRIMARY KEY,
        subject_id TEXT NOT NULL,
        project_id TEXT REFERENCES projects(project_id),
        kind TEXT NOT NULL,
        content TEXT,                       -- NULL once tombstoned
        content_hash TEXT NOT NULL,
        source_type TEXT NOT NULL,
        source_ref TEXT,
        trust TEXT NOT NULL,
        visibility TEXT NOT NULL,
        author_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        purged_at TEXT
      );
      CREATE INDEX observations_by_subject ON observations(subject_id, created_at);
      CREATE INDEX observations_by_created ON observations(created_at, observation_id);
      CREATE TABLE claims (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- rowid for the FTS index
        claim_id TEXT NOT NULL UNIQUE,
        subject_id TEXT NOT NULL,
        project_id TEXT REFERENCES projects(project_id),
        kind TEXT NOT NULL,
        statement TEXT NOT NULL,
        status TEXT NOT NULL,
        visibility TEXT NOT NULL,
        trust TEXT NOT NULL,
        version INTEGER NOT NULL,
        valid_from TEXT NOT NULL,
        valid_to TEXT,
        superseded_by TEXT,
        disputes TEXT NOT NULL,             -- JSON array of claim ids this claim disputes
        author_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX claims_current ON claims(status, seq);
      CREATE INDEX claims_by_subject ON claims(subject_id, status, seq);
      CREATE INDEX claims_by_project ON claims(project_id, status, seq);
      CREATE TABLE claim_sources (
        claim_id TEXT NOT NULL REFERENCES claims(claim_id),
        position INTEGER NOT NULL,
        observation_id TEXT NOT NULL REFERENCES observations(observation_id),
        relation TEXT NOT NULL,
        PRIMARY KEY (claim_id, position)
      );
      CREATE INDEX claim_sources_by_observation ON claim_sources(observation_id);
      CREATE VIRTUAL TABLE claims_fts USING fts5(statement, content='', contentless_delete=1, tokenize='porter unicode61');
      CREATE TABLE context_runs (
        context_id TEXT PRIMARY KEY,
        actor_id TEXT NOT NULL,
        query TEXT,
        subject_id TEXT,
        project_id TEXT,
        kinds TEXT,
        token_budget INTEGER NOT NULL,
        tokens_used INTEGER NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE context_items (
        context_id TEXT NOT NULL REFERENCES context_runs(context_id),
        position INTEGER NOT NULL,
        claim_id TEXT NOT NULL REFERENCES claims(claim_id),
        score REAL NOT NULL,
        tokens INTEGER NOT NULL,
        PRIMARY KEY (context_id, position)
      );
      CREATE TABLE feedback (
        feedback_id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL REFERENCES context_runs(context_id),
        claim_id TEXT REFERENCES claims(claim_id),
        outcome TEXT NOT NULL,
        note TEXT,
        client_mutation_id TEXT UNIQUE,
        actor_id TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX feedback_by_claim ON feedback(claim_id);
      CREATE TABLE claim_feedback_score (
        claim_id TEXT PRIMARY KEY REFERENCES claims(claim_id),
        score REAL NOT NULL                 -- running sum of outcome weights, read by compile ranking
      );
    `,
  },
  {
    name: "0003_coordination",
    sql: `
      CREATE TABLE checkpoints (
        checkpoint_id TEXT PRIMARY KEY,
        subject_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        state TEXT NOT NULL,
        ttl_seconds INTEGER NOT NULL,
        writer_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        UNIQUE (subject_id, agent_id, kind)
      );
      CREATE INDEX checkpoints_by_expiry ON checkpoints(expires_at);
      CREATE TABLE leases (
        lease_id TEXT PRIMARY KEY,
        resource_type TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        holder_id TEXT NOT NULL,
        ttl_seconds INTEGER NOT NULL,
        acquired_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        released_at TEXT
      );
      CREATE UNIQUE INDEX leases_live_resource ON leases(resource_type, resource_id) WHERE released_at IS NULL;
      CREATE INDEX leases_by_expiry ON leases(expires_at) WHERE released_at IS NULL;
      CREATE TABLE handoffs (
        handoff_id TEXT PRIMARY KEY,
        from_principal_id TEXT NOT NULL,
        to_principal_id TEXT NOT NULL REFERENCES principals(principal_id),
        context_id TEXT REFERENCES context_runs(context_id),
        checkpoint_id TEXT,
        note TEXT,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        resolved_at TEXT
      );
      CREATE INDEX handoffs_inbox ON handoffs(to_principal_id, status);
      CREATE INDEX handoffs_by_context ON handoffs(context_id);
      CREATE INDEX handoffs_by_checkpoint ON handoffs(checkpoint_id);
    `,
  },
  {
    name: "0004_outbox",
    sql: `
      -- Work to carry out after commit, written in the same transaction as the change that causes it
      -- (e.g. record ownership for the global D1 index). Drained by the alarm in bounded batches.
      CREATE TABLE outbox (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        topic TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX outbox_by_topic ON outbox(topic, seq);
    `,
  },
  {
    name: "0005_webhooks",
    sql: `
      CREATE TABLE webhooks (
        webhook_id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        secret TEXT NOT NULL,                -- needed to sign; never returned
        events TEXT NOT NULL,                -- JSON array of kinds, or ["*"]
        status TEXT NOT NULL,                -- 'active' | 'paused' | 'disabled'
        failure_count INTEGER NOT NULL,      -- consecutive failures
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE deliveries (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        delivery_id TEXT NOT NULL UNIQUE,
        webhook_id TEXT NOT NULL REFERENCES webhooks(webhook_id) ON DELETE CASCADE,
        event_id TEXT NOT NULL,
        status TEXT NOT NULL,                -- 'sending' | 'delivered' | 'pending' | 'failed'
        attempts INTEGER NOT NULL,
        last_attempt_at TEXT,
        next_retry_at TEXT,
        response_status INTEGER,
        created_at TEXT NOT NULL,
        UNIQUE (webhook_id, event_id)        -- exactly once per hook and event
      );
      CREATE INDEX deliveries_by_status ON deliveries(status);
    `,
  },
  {
    name: "0006_access_model",
    sql: `
      ALTER TABLE principals ADD COLUMN removed_at TEXT;
      CREATE TABLE workspaces (
        workspace_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE memberships (
        membership_id TEXT PRIMARY KEY,
        principal_id TEXT NOT NULL REFERENCES principals(principal_id),
        workspace_id TEXT REFERENCES workspaces(workspace_id),   -- NULL: the organization itself
        role TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        removed_at TEXT,
        removed_by TEXT
      );
      -- One live membership per principal and scope (organization or one workspace).
      CREATE UNIQUE INDEX memberships_live ON memberships(principal_id, coalesce(workspace_id, '')) WHERE removed_at IS NULL;
      CREATE INDEX memberships_by_workspace ON memberships(workspace_id, created_at);
      INSERT INTO memberships (membership_id, principal_id, workspace_id, role, created_by, created_at)
        SELECT 'mbr_' || lower(hex(randomblob(16))), principal_id, NULL, role, principal_id, created_at FROM principals;
      CREATE TABLE grants (
        grant_id TEXT PRIMARY KEY,
        grantee_id TEXT NOT NULL REFERENCES principals(principal_id),
        target_type TEXT NOT NULL,             -- 'organization' | 'project' | 'subject'
        target_id TEXT,                        -- project id (NULL: unscoped memory) or subject id
        can_read INTEGER NOT NULL,
        can_write INTEGER NOT NULL,
        can_approve INTEGER NOT NULL,
        can_admin INTEGER NOT NULL,
        granted_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT,
        revoked_by TEXT
      );
      CREATE INDEX grants_by_grantee ON grants(grantee_id) WHERE revoked_at IS NULL;
      CREATE INDEX grants_by_created ON grants(created_at, grant_id);
      CREATE INDEX observations_by_project ON observations(project_id, created_at);
    `,
  },
  {
    name: "0007_job_due_times",
    sql: `
      -- Background work became named jobs, each with its own due time in org_meta ('job_due:<name>').
      -- Carry over the webhook delivery due time, and make the other jobs due at once where they have
      -- work waiting, so the first alarm after the upgrade runs them.
      INSERT INTO org_meta (name, value) SELECT 'job_due:webhook_delivery', value FROM org_meta WHERE name = 'webhook_due_at';
      DELETE FROM org_meta WHERE name = 'webhook_due_at';
      INSERT INTO org_meta (name, value) SELECT 'job_due:record_owners', '0' WHERE EXISTS (SELECT 1 FROM outbox);
      INSERT INTO org_meta (name, value) SELECT 'job_due:expiry_sweep', '0'
        WHERE EXISTS (SELECT 1 FROM checkpoints) OR EXISTS (SELECT 1 FROM leases WHERE released_at IS NULL);
    `,
  },
  {
    name: "0008_revocation_provenance",
    sql: `
      -- The grant a delegated grant was re-shared from (NULL: given on the grantor's role), so revoking
      -- a grant revokes everything delegated from it.
      ALTER TABLE grants ADD COLUMN delegated_from TEXT REFERENCES grants(grant_id);
      CREATE INDEX grants_by_source ON grants(delegated_from) WHERE delegated_from IS NOT NULL;
      CREATE INDEX grants_by_grantor ON grants(granted_by);
      -- Who created a principal (NULL: nobody, e.g. the bootstrap owner), so removing a principal
      -- revokes the keys of the principals it created. Backfilled from the first organization membership,
      -- which has always recorded it.
      ALTER TABLE principals ADD COLUMN created_by TEXT;
      UPDATE principals SET created_by = NULLIF((SELECT m.created_by FROM memberships m
        WHERE m.principal_id = principals.principal_id AND m.workspace_id IS NULL ORDER BY m.created_at, m.rowid LIMIT 1), principal_id);
      CREATE INDEX principals_by_creator ON principals(created_by) WHERE created_by IS NOT NULL;
    `,
  },
  {
    name: "0009_dashboard_accounts",
    sql: `
      -- password_hash now holds the self-describing form pbkdf2-sha256$<iterations>$<salt>$<hash> (peppered);
      -- rows from before keep the bare hex hash with password_salt and are upgraded at their next login.
      ALTER TABLE operator_accounts ADD COLUMN display_name TEXT;
      ALTER TABLE operator_accounts ADD COLUMN password_changed_at TEXT;
      CREATE TABLE dashboard_sessions (
        session_id TEXT PRIMARY KEY,
        key_hash TEXT NOT NULL UNIQUE,          -- SHA-256 hex of the svc_sk_ session token
        account_id TEXT NOT NULL REFERENCES operator_accounts(account_id),
        stage TEXT NOT NULL,                    -- 'password_change' | 'staged' | 'full'
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE INDEX dashboard_sessions_by_account ON dashboard_sessions(account_id) WHERE revoked_at IS NULL;
      CREATE TABLE passkeys (
        passkey_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES operator_accounts(account_id),
        credential_id TEXT NOT NULL UNIQUE,     -- base64url
        public_key TEXT NOT NULL,               -- base64url COSE key
        counter INTEGER NOT NULL,
        transports TEXT NOT NULL,               -- JSON array
        name TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at TEXT
      );
      CREATE INDEX passkeys_by_account ON passkeys(account_id) WHERE revoked_at IS NULL;
      CREATE TABLE webauthn_challenges (
        challenge TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        purpose TEXT NOT NULL,                  -- 'register' | 'authenticate'
        expires_at TEXT NOT NULL,
        used_at TEXT
      );
      CREATE TABLE recovery_codes (
        account_id TEXT NOT NULL REFERENCES operator_accounts(account_id),
        code_hash TEXT NOT NULL,                -- SHA-256 hex of the normalized code
        created_at TEXT NOT NULL,
        used_at TEXT,
        PRIMARY KEY (account_id, code_hash)
      );
    `,
  },
  {
    name: "0010_governance",
    sql: `
      CREATE TABLE policies (
        policy_id TEXT PRIMARY KEY,
        type TEXT NOT NULL,                  -- 'approval' | 'release' | 'retention'
        name TEXT NOT NULL UNIQUE,
        rules TEXT NOT NULL,                 -- JSON, shape per type (governance/schema.ts)
        status TEXT NOT NULL,                -- 'draft' | 'active' | 'retired'
        version INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      -- At most one active policy per type.
      CREATE UNIQUE INDEX policies_one_active ON policies(type) WHERE status = 'active';
      CREATE INDEX policies_by_created ON policies(created_at, policy_id);
      -- Every version a policy has had, the current one included.
      CREATE TABLE policy_versions (
        policy_id TEXT NOT NULL REFERENCES policies(policy_id),
        version INTEGER NOT NULL,
        rules TEXT NOT NULL,
        status TEXT NOT NULL,
        changed_by TEXT NOT NULL,
        changed_at TEXT NOT NULL,
        PRIMARY KEY (policy_id, version)
      );
      CREATE TABLE claim_approvals (
        approval_id TEXT PRIMARY KEY,
        claim_id TEXT NOT NULL REFERENCES claims(claim_id),
        claim_version INTEGER NOT NULL,
        status TEXT NOT NULL,                -- 'pending' | 'approved' | 'rejected'
        evidence TEXT NOT NULL,              -- JSON { observation_ids, hidden_source_count } as the submitter saw it
        note TEXT,
        submitted_by TEXT NOT NULL,
        decided_by TEXT,
        decided_at TEXT,
        decision_note TEXT,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX claim_approvals_one_pending ON claim_approvals(claim_id, claim_version) WHERE status = 'pending';
      CREATE INDEX claim_approvals_by_claim ON claim_approvals(claim_id, claim_version, status);
      CREATE INDEX claim_approvals_by_created ON claim_approvals(created_at, approval_id);
      CREATE TABLE channels (
        channel_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        audiences TEXT NOT NULL,             -- JSON array of strings
        min_trust TEXT NOT NULL,
        gateway_principal_id TEXT NOT NULL REFERENCES principals(principal_id),
        status TEXT NOT NULL,                -- 'active' | 'paused' | 'disabled' (final)
        version INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      -- One channel per gateway principal (a disabled channel no longer holds it).
      CREATE UNIQUE INDEX channels_one_per_gateway ON channels(gateway_principal_id) WHERE status != 'disabled';
      CREATE INDEX channels_by_created ON channels(created_at, channel_id);
      CREATE TABLE knowledge_releases (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        release_id TEXT NOT NULL UNIQUE,
        channel_id TEXT NOT NULL REFERENCES channels(channel_id),
        claim_id TEXT NOT NULL REFERENCES claims(claim_id),
        claim_version INTEGER NOT NULL,
        status TEXT NOT NULL,                -- 'draft' | 'approved' | 'active' | 'revoked'
        snapshot TEXT NOT NULL,              -- JSON, immutable: what the channel serves
        created_by TEXT NOT NULL,
        approved_by TEXT,
        approved_at TEXT,
        activated_at TEXT,
        revoked_by TEXT,
        revoked_at TEXT,
        created_at TEXT NOT NULL
      );
      -- One active release of a claim per channel.
      CREATE UNIQUE INDEX knowledge_releases_one_active ON knowledge_releases(channel_id, claim_id) WHERE status = 'active';
      CREATE INDEX knowledge_releases_by_channel ON knowledge_releases(channel_id, status, seq);
    `,
  },
  {
    name: "0011_federation",
    sql: `
      CREATE TABLE federation_peers (
        peer_id TEXT PRIMARY KEY,
        endpoint TEXT NOT NULL UNIQUE,        -- one endpoint per organization
        shared_secret TEXT NOT NULL,          -- HMAC key; never returned
        direction TEXT NOT NULL,              -- 'push' | 'pull' | 'bidirectional': what the peer may do here
        status TEXT NOT NULL,                 -- 'active' | 'suspended'
        label TEXT,
        cursor TEXT,                          -- last event id served to the peer (reported)
        scan_seq INTEGER NOT NULL DEFAULT 0,  -- events.seq scanned so far (internal; never leaves)
        remote_org_id TEXT,                   -- pinned by the first signed bundle the peer pushes
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        suspended_at TEXT,
        last_exchange_at TEXT
      );
      CREATE INDEX federation_peers_by_created ON federation_peers(created_at, peer_id);
      CREATE TABLE federation_filters (
        filter_id TEXT PRIMARY KEY,
        peer_id TEXT NOT NULL REFERENCES federation_peers(peer_id),
        resource_type TEXT NOT NULL,          -- 'observation' | 'claim'
        include_kinds TEXT,                   -- JSON array or NULL (any kind)
        exclude_subjects TEXT,                -- JSON array or NULL
        min_trust TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX federation_filters_by_peer ON federation_filters(peer_id, created_at);
      CREATE TABLE federation_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        log_id TEXT NOT NULL UNIQUE,
        peer_id TEXT NOT NULL REFERENCES federation_peers(peer_id),
        operation TEXT NOT NULL,              -- 'pull' | 'push'
        counts TEXT NOT NULL,                 -- JSON { events, success, conflict, rejected, bundles }
        cursor_before TEXT,
        cursor_after TEXT,
        request_id TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX federation_log_by_peer ON federation_log(peer_id, seq);
      -- Push replay identity: the same exchange_id answers its stored result.
      CREATE TABLE federation_exchanges (
        peer_id TEXT NOT NULL REFERENCES federation_peers(peer_id),
        exchange_id TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        response TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (peer_id, exchange_id)
      );
      -- Events a peer pushed (metadata only), keyed by the peer's event id.
      CREATE TABLE federation_inbox (
        peer_id TEXT NOT NULL REFERENCES federation_peers(peer_id),
        remote_event_id TEXT NOT NULL,
        body_hash TEXT NOT NULL,
        kind TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        remote_created_at TEXT NOT NULL,
        received_at TEXT NOT NULL,
        PRIMARY KEY (peer_id, remote_event_id)
      );
      -- Records imported from a peer's bundles: (peer, remote id) -> the new local id.
      CREATE TABLE federation_imports (
        peer_id TEXT NOT NULL REFERENCES federation_peers(peer_id),
        remote_id TEXT NOT NULL,
        record_type TEXT NOT NULL,            -- 'observation' | 'claim'
        local_id TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        PRIMARY KEY (peer_id, remote_id)
      );
    `,
  },
  {
    name: "0012_record_owner_backfill",
    sql: `
      -- Record ownership moved from the D1 record_owners table (dropped) to the IdRegistry shards:
      -- queue every existing project, observation and claim id once more, so the alarm registers them.
      INSERT INTO outbox (topic, payload, created_at) SELECT 'record_owner', project_id, created_at FROM projects;
      INSERT INTO outbox (topic, payload, created_at) SELECT 'record_owner', observation_id, created_at FROM observations;
      INSERT INTO outbox (topic, payload, created_at) SELECT 'record_owner', claim_id, created_at FROM claims;
      INSERT OR REPLACE INTO org_meta (name, value) SELECT 'job_due:record_owners', '0' WHERE EXISTS (SELECT 1 FROM outbox);
    `,
  },
  {
    name: "0013_retention_holds_mappings",
    sql: `
      -- Retention exclusion: set by POST /v1/retention/apply, cleared when a legal hold covers the
      -- record. Every read predicate (records.ts retrievable) tests it; nothing is deleted.
      ALTER TABLE observations ADD COLUMN retention_excluded_at TEXT;
      ALTER TABLE claims ADD COLUMN retention_excluded_at TEXT;
      -- Retention apply walks records by age: (created_at, id) ranges, oldest first.
      CREATE INDEX claims_by_created ON claims(created_at, claim_id);
      CREATE TABLE legal_holds (
        hold_id TEXT PRIMARY KEY,
        target_type TEXT NOT NULL,            -- 'claim' | 'observation'
        target_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        status TEXT NOT NULL,                 -- 'active' | 'released'
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        released_by TEXT,
        released_at TEXT
      );
      -- Coverage asks "is there an active hold on any of these ids".
      CREATE INDEX legal_holds_active_by_target ON legal_holds(target_id) WHERE status = 'active';
      CREATE INDEX legal_holds_by_created ON legal_holds(created_at, hold_id);
      CREATE TABLE identity_mappings (
        mapping_id TEXT PRIMARY KEY,
        external_system TEXT NOT NULL,
        external_id TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        status TEXT NOT NULL,                 -- 'active' | 'retired'
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        retired_by TEXT,
        retired_at TEXT,
        UNIQUE (external_system, external_id, version)
      );
      -- One active mapping per external identity.
      CREATE UNIQUE INDEX identity_mappings_one_active ON identity_mappings(external_system, external_id) WHERE status = 'active';
      CREATE INDEX identity_mappings_by_created ON identity_mappings(created_at, mapping_id);
      CREATE INDEX identity_mappings_by_subject ON identity_mappings(subject_id, created_at);
    `,
  },
  {
    // Workspaces scope records (DESIGN part 2): a project may belong to a workspace, fixed when it is
    // created. Observations and claims carry their project's workspace (copied at insert, never
    // changed) so the one read predicate can filter on it without a join.
    name: "0014_workspace_scope",
    sql: `
      ALTER TABLE projects ADD COLUMN workspace_id TEXT REFERENCES workspaces(workspace_id);
      ALTER TABLE observations ADD COLUMN workspace_id TEXT;
      ALTER TABLE claims ADD COLUMN workspace_id TEXT;
      CREATE INDEX projects_by_workspace ON projects(workspace_id) WHERE workspace_id IS NOT NULL;
      CREATE INDEX claims_by_workspace ON claims(workspace_id, status, seq) WHERE workspace_id IS NOT NULL;
      CREATE INDEX claims_disputed ON claims(seq) WHERE status = 'disputed';
      CREATE INDEX claims_disputing ON claims(seq) WHERE disputes != '[]';
      CREATE INDEX claims_by_valid_to ON claims(valid_to) WHERE valid_to IS NOT NULL;
      CREATE INDEX context_items_by_claim ON context_items(claim_id);
      CREATE INDEX knowledge_releases_by_claim ON knowledge_releases(claim_id, status);
      CREATE INDEX knowledge_releases_by_status ON knowledge_releases(status, created_at);
      CREATE INDEX claim_approvals_by_status ON claim_approvals(status, created_at);
    `,
  },
  {
    name: "0015_webhook_start",
    sql: `
      -- The event log position when the hook was registered: it receives only later events. Hooks
      -- registered before this migration keep receiving the whole log (0).
      ALTER TABLE webhooks ADD COLUMN from_seq INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX webhooks_by_creator ON webhooks(created_by);
    `,
  },
  {
    // Ranking statistics over team claims only (every reader of the organization may read those), kept
    // by the claim writers in the same transaction, so that no score depends on a record the caller
    // cannot read and no query counts postings. Backfilled here through a throwaway index of the team
    // claims, which tokenizes exactly as claims_fts does.
    name: "0016_ranking_statistics",
    sql: `
      CREATE TABLE claim_terms (
        term TEXT PRIMARY KEY,              -- a claims_fts term (porter stem)
        claims INTEGER NOT NULL             -- team claims holding it
      ) WITHOUT ROWID;
      CREATE TABLE claim_corpus (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        claims INTEGER NOT NULL,            -- team claims
        tokens INTEGER NOT NULL             -- their total tokens (bm25's average length)
      );
      CREATE VIRTUAL TABLE backfill_team_fts USING fts5(statement, content='', tokenize='porter unicode61');
      INSERT INTO backfill_team_fts (rowid, statement) SELECT seq, statement FROM claims WHERE visibility = 'team' AND workspace_id IS NULL;
      CREATE VIRTUAL TABLE backfill_team_vocab USING fts5vocab(backfill_team_fts, 'row');
      INSERT INTO claim_terms (term, claims) SELECT term, doc FROM backfill_team_vocab;
      INSERT INTO claim_corpus (id, claims, tokens) VALUES (1,
        (SELECT count(*) FROM claims WHERE visibility = 'team' AND workspace_id IS NULL), (SELECT coalesce(sum(cnt), 0) FROM backfill_team_vocab));
      DROP TABLE backfill_team_vocab;
      DROP TABLE backfill_team_fts;
      -- Result snapshots of memories search, so that its pages neither skip nor repeat under writes.
      CREATE TABLE search_snapshots (
        snapshot_id TEXT PRIMARY KEY,
        principal_id TEXT NOT NULL,         -- the only caller its cursor works for
        query_key TEXT NOT NULL,            -- the search it answers (q and filters)
        claim_ids TEXT NOT NULL,            -- JSON array, best first
        expires_at TEXT NOT NULL
      );
      CREATE INDEX search_snapshots_by_expiry ON search_snapshots(expires_at);
    `,
  },
  {
    // The Atlas's workspace_graph walks graph claims once per way the caller may read them (records.ts
    // atlasClaims), newest first; each walk needs an index in seq order behind that way's equality, and
    // the partial condition (graph statuses, not excluded by retention) is the query's, term for term,
    // so a walk never steps over a revoked or retention-excluded claim.
    name: "0017_atlas_graph_indexes",
    sql: `
      CREATE INDEX claims_graph_by_visibility ON claims(visibility, seq)
        WHERE status IN ('active', 'disputed', 'superseded') AND retention_excluded_at IS NULL;
      CREATE INDEX claims_graph_by_workspace ON claims(workspace_id, visibility, seq)
        WHERE status IN ('active', 'disputed', 'superseded') AND retention_excluded_at IS NULL;
      CREATE INDEX claims_graph_by_author ON claims(author_id, seq)
        WHERE status IN ('active', 'disputed', 'superseded') AND retention_excluded_at IS NULL;
      CREATE INDEX claims_graph_by_project ON claims(project_id, seq)
        WHERE status IN ('active', 'disputed', 'superseded') AND retention_excluded_at IS NULL;
      CREATE INDEX claims_graph_by_subject ON claims(subject_id, seq)
        WHERE status IN ('active', 'disputed', 'superseded') AND retention_excluded_at IS NULL;
    `,
  },
  {
    name: "0018_vector_index",
    sql: `
      -- The embedded default vector index: int8 vectors with 1/|v| (src/vector/local-index.ts).
      CREATE TABLE local_vectors (
        record_id TEXT PRIMARY KEY,
        dimensions INTEGER NOT NULL,
        inv_norm REAL NOT NULL,
        data BLOB NOT NULL
      );
      -- What index drain last upserted, whatever the backend: verify (pending vs missing) and drift.
      CREATE TABLE indexed_records (
        record_id TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        dimensions INTEGER NOT NULL,
        indexed_at TEXT NOT NULL
      );
      -- Enrichment: candidate claims proposed by the extraction model, for review; never canonical.
      CREATE TABLE enrichment_proposals (
        proposal_id TEXT PRIMARY KEY,
        observation_id TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        statement TEXT NOT NULL,
        status TEXT NOT NULL,               -- 'pending' (review is not built yet)
        model TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX enrichment_proposals_by_observation ON enrichment_proposals(observation_id);
      -- The Atlas's review_queue reads pending proposals newest first.
      CREATE INDEX enrichment_proposals_by_status ON enrichment_proposals(status, created_at);
      -- Records written before the index existed: queue every claim once, so a drain embeds them.
      INSERT INTO outbox (topic, payload, created_at) SELECT 'index', claim_id, created_at FROM claims;
    `,
  },
  {
    // Each claim's statement as claims_fts terms, written with the claim, so that ranking and search
    // read a candidate's terms instead of tokenizing its statement on every query (the cost that grew
    // with the organization once candidate reads were bounded). Backfilled from claims_fts itself (term
    // instances in position order) for ASCII statements, where the index and the JavaScript tokenizer
    // agree byte for byte; other claims have no row and are tokenized when read, as before.
    // The shared statistics are rebuilt without retention-excluded claims: nobody may retrieve those,
    // so no score may depend on them (0016 counted them).
    name: "0019_claim_stems",
    sql: `
      CREATE TABLE claim_stems (
        seq INTEGER PRIMARY KEY,            -- claims.seq
        stems TEXT NOT NULL                 -- claims_fts terms of the statement, in order, space-separated
      );
      CREATE VIRTUAL TABLE backfill_claims_instances USING fts5vocab(claims_fts, 'instance');
      CREATE TABLE backfill_ascii_claims AS SELECT seq FROM claims WHERE length(CAST(statement AS BLOB)) = length(statement);
      INSERT INTO claim_stems (seq, stems)
        SELECT doc, group_concat(term, ' ' ORDER BY offset) FROM backfill_claims_instances
         WHERE doc IN (SELECT seq FROM backfill_ascii_claims) GROUP BY doc;
      INSERT INTO claim_stems (seq, stems) SELECT seq, '' FROM backfill_ascii_claims WHERE seq NOT IN (SELECT seq FROM claim_stems);
      DROP TABLE backfill_ascii_claims;
      DROP TABLE backfill_claims_instances;
      DELETE FROM claim_terms;
      DELETE FROM claim_corpus;
      CREATE VIRTUAL TABLE backfill_team_fts USING fts5(statement, content='', tokenize='porter unicode61');
      INSERT INTO backfill_team_fts (rowid, statement) SELECT seq, statement FROM claims
        WHERE visibility = 'team' AND workspace_id IS NULL AND retention_excluded_at IS NULL;
      CREATE VIRTUAL TABLE backfill_team_vocab USING fts5vocab(backfill_team_fts, 'row');
      INSERT INTO claim_terms (term, claims) SELECT term, doc FROM backfill_team_vocab;
      INSERT INTO claim_corpus (id, claims, tokens) VALUES (1,
        (SELECT count(*) FROM claims WHERE visibility = 'team' AND workspace_id IS NULL AND retention_excluded_at IS NULL),
        (SELECT coalesce(sum(cnt), 0) FROM backfill_team_vocab));
      DROP TABLE backfill_team_vocab;
      DROP TABLE backfill_team_fts;
    `,
  },
  {
    // Record ids registered with the ownership registry ahead of use (src/org/reserved-ids.ts), so a
    // write that creates a record answers without a registry call. A handful per prefix; a taken id's
    // row is deleted by the write that took it.
    name: "0020_reserved_record_ids",
    sql: `
      CREATE TABLE reserved_record_ids (
        record_id TEXT PRIMARY KEY,
        prefix TEXT NOT NULL,               -- prj_, obs_ or claim_
        taken INTEGER NOT NULL DEFAULT 0    -- 1 inside the transaction of the write that took it
      ) WITHOUT ROWID;
    `,
  },
  {
    // The JavaScript tokenizer (fts.ts ftsTokens) now splits and folds exactly as claims_fts's unicode61
    // does; before, it differed on non-ASCII text (Greek accents, long s, Hangul, letters newer than
    // Unicode 6.1, marks outside unicode61's diacritic table, ...). What it computed for such claims is
    // recomputed from claims_fts itself: the claim_stems rows of non-ASCII statements whose terms
    // differ, and the shared statistics rows (claim_terms, claim_corpus) whose counts differ from the
    // index's over the shared claims (team, no workspace, not retention-excluded: sharesTerms in
    // records.ts). ASCII statements tokenized the same before, so their rows are left as they are.
    name: "0021_tokenizer_parity",
    sql: `
      CREATE VIRTUAL TABLE parity_instances USING fts5vocab(claims_fts, 'instance');
      CREATE TABLE parity_non_ascii AS SELECT seq FROM claims WHERE length(CAST(statement AS BLOB)) != length(statement);
      -- fts5vocab can only be scanned: one pass each, filtered by IN (a join would rescan it per claim).
      CREATE TABLE parity_stems AS SELECT doc AS seq, group_concat(term, ' ' ORDER BY offset) AS stems FROM parity_instances
        WHERE doc IN (SELECT seq FROM parity_non_ascii) GROUP BY doc;
      INSERT INTO parity_stems (seq, stems) SELECT seq, '' FROM parity_non_ascii WHERE seq NOT IN (SELECT seq FROM parity_stems);
      UPDATE claim_stems SET stems = p.stems FROM parity_stems p WHERE p.seq = claim_stems.seq AND p.stems != claim_stems.stems;
      -- Without a non-ASCII claim the old tokenizer counted right: nothing below reads or writes then.
      CREATE TABLE parity_shared AS SELECT seq FROM claims
        WHERE visibility = 'team' AND workspace_id IS NULL AND retention_excluded_at IS NULL AND EXISTS (SELECT 1 FROM parity_non_ascii);
      CREATE TABLE parity_terms AS SELECT term, count(DISTINCT doc) AS claims, count(*) AS tokens FROM parity_instances
        WHERE EXISTS (SELECT 1 FROM parity_non_ascii) AND doc IN (SELECT seq FROM parity_shared) GROUP BY term;
      DELETE FROM claim_terms WHERE EXISTS (SELECT 1 FROM parity_non_ascii) AND term NOT IN (SELECT term FROM parity_terms);
      INSERT INTO claim_terms (term, claims) SELECT term, claims FROM parity_terms WHERE true
        ON CONFLICT (term) DO UPDATE SET claims = excluded.claims WHERE claim_terms.claims != excluded.claims;
      INSERT INTO claim_corpus (id, claims, tokens)
        SELECT 1, (SELECT count(*) FROM parity_shared), (SELECT coalesce(sum(tokens), 0) FROM parity_terms)
         WHERE EXISTS (SELECT 1 FROM parity_non_ascii)
        ON CONFLICT (id) DO UPDATE SET claims = excluded.claims, tokens = excluded.tokens
          WHERE claim_corpus.claims != excluded.claims OR claim_corpus.tokens != excluded.tokens;
      DROP TABLE parity_terms;
      DROP TABLE parity_shared;
      DROP TABLE parity_stems;
      DROP TABLE parity_non_ascii;
      DROP TABLE parity_instances;
    `,
  },
  {
    // What compile's and search's candidate reads need of a claim, in one narrow row per claim: the
    // columns the retrieval predicate and scoring read, the statement's size in UTF-8 bytes, and its
    // stored terms (moved here from claim_stems, which is dropped). Reading a candidate from two wide
    // tables (claims, claim_stems) was two random page reads per match, what still grew with the
    // organization once the number of matches read was bounded. status, valid_to and
    // retention_excluded_at (and the other copied columns) are copies of the claims columns: the
    // triggers below keep them in step with every statement on claims, and they are read only through
    // `retrievable` (test/records.test.ts fails if they drift).
    name: "0022_claim_ranking",
    sql: `
      CREATE TABLE claim_ranking (
        seq INTEGER PRIMARY KEY,            -- claims.seq
        claim_id TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        project_id TEXT,
        kind TEXT NOT NULL,
        trust TEXT NOT NULL,
        status TEXT NOT NULL,
        valid_to TEXT,
        retention_excluded_at TEXT,
        visibility TEXT NOT NULL,
        workspace_id TEXT,
        author_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        bytes INTEGER NOT NULL,             -- length of the statement in UTF-8 bytes (its tokens)
        stems TEXT                          -- claims_fts terms of the statement (was claim_stems.stems); NULL: tokenize it
      );
      INSERT INTO claim_ranking (seq, claim_id, subject_id, project_id, kind, trust, status, valid_to, retention_excluded_at,
          visibility, workspace_id, author_id, created_at, bytes, stems)
        SELECT c.seq, c.claim_id, c.subject_id, c.project_id, c.kind, c.trust, c.status, c.valid_to, c.retention_excluded_at,
          c.visibility, c.workspace_id, c.author_id, c.created_at, length(CAST(c.statement AS BLOB)), s.stems
          FROM claims c LEFT JOIN claim_stems s ON s.seq = c.seq;
      DROP TABLE claim_stems;
      -- The copy is kept by the database, not by each writer: any statement that inserts, changes or
      -- deletes a claim moves its claim_ranking row in the same transaction (insertClaim adds the stems).
      CREATE TRIGGER claim_ranking_on_insert AFTER INSERT ON claims BEGIN
        INSERT INTO claim_ranking (seq, claim_id, subject_id, project_id, kind, trust, status, valid_to, retention_excluded_at, visibility, workspace_id, author_id, created_at, bytes, stems)
          VALUES (NEW.seq, NEW.claim_id, NEW.subject_id, NEW.project_id, NEW.kind, NEW.trust, NEW.status, NEW.valid_to, NEW.retention_excluded_at, NEW.visibility, NEW.workspace_id, NEW.author_id, NEW.created_at, length(CAST(NEW.statement AS BLOB)), NULL);
      END;
      CREATE TRIGGER claim_ranking_on_update AFTER UPDATE ON claims BEGIN
        UPDATE claim_ranking SET claim_id = NEW.claim_id, subject_id = NEW.subject_id, project_id = NEW.project_id, kind = NEW.kind, trust = NEW.trust, status = NEW.status, valid_to = NEW.valid_to, retention_excluded_at = NEW.retention_excluded_at, visibility = NEW.visibility, workspace_id = NEW.workspace_id, author_id = NEW.author_id, created_at = NEW.created_at, bytes = length(CAST(NEW.statement AS BLOB)) WHERE seq = NEW.seq;
      END;
      CREATE TRIGGER claim_ranking_on_delete AFTER DELETE ON claims BEGIN
        DELETE FROM claim_ranking WHERE seq = OLD.seq;
      END;
    `,
  },
  {
    // Most observations name no project, and the reads of this index ask for one project
    // (project_id = ?, which implies NOT NULL): leaving project-less rows out spares each such append
    // one B-tree page write (docs/BENCHMARKS.md, part 1b). The one read of project-less observations
    // (GET /v1/projects/~/references) now scans the table instead of this index; it already read
    // most of the table through it, since most observations have no project.
    name: "0023_observations_by_project_partial",
    sql: `
      DROP INDEX observations_by_project;
      CREATE INDEX observations_by_project ON observations(project_id, created_at) WHERE project_id IS NOT NULL;
    `,
  },
  {
    // 0023 undone: with observations_by_project partial, GET /v1/projects/~/references (project-less
    // observations, `project_id IS NULL`) walked every observation of the organization to find the
    // few without a project wherever most have one, and its existence check did so even to answer 404.
    // One page write saved per append was not worth a read whose cost grows with the whole table.
    name: "0024_observations_by_project_whole",
    sql: `
      DROP INDEX observations_by_project;
      CREATE INDEX observations_by_project ON observations(project_id, created_at);
    `,
  },
  {
    // Search snapshots hold claim seqs (a JSON array of integers, best first) instead of claim ids:
    // a fifth of the bytes, and later pages look claims up by rowid. Snapshots live 15 minutes, so the
    // old ones are dropped rather than converted: their cursors then find no snapshot and get the same
    // 400 as an expired cursor.
    name: "0025_search_snapshots_by_seq",
    sql: `
      DROP TABLE search_snapshots;
      CREATE TABLE search_snapshots (
        snapshot_id TEXT PRIMARY KEY,
        principal_id TEXT NOT NULL,         -- the only caller its cursor works for
        query_key TEXT NOT NULL,            -- the search it answers (q and filters)
        claim_seqs TEXT NOT NULL,           -- JSON array of claims.seq, best first
        expires_at TEXT NOT NULL
      );
      CREATE INDEX search_snapshots_by_expiry ON search_snapshots(expires_at);
    `,
  },
  {
    // The neighbour reads of compile's ranking (records.ts readableNeighbours, readableWithin) walk
    // claim_ranking in write order once per way the caller may read a claim, each walk one range of one
    // of these indexes: equalities on that way's columns, then seq, so each stops at its n-th claim having
    // read no claim the caller cannot read. One walk of the primary key instead read every claim between
    // two readable ones: for a caller who reads little of a large organization, nearly all of them.
    // by_workspace serves team outside workspaces (workspace_id IS NULL), team of a workspace and a
    // workspace's private claims; by_visibility owners and admins (every team claim) and an
    // organization-wide grant. retention_excluded_at IS NULL (every retrieval's term) is an equality
    // before seq, so no walk steps over an excluded claim, and each walk reads only the index (seq is in
    // it). Each costs one index entry per claim written, rewritten when a claim changes.
    name: "0026_claim_ranking_walks",
    sql: `
      CREATE INDEX claim_ranking_by_visibility ON claim_ranking(visibility, retention_excluded_at, seq);
      CREATE INDEX claim_ranking_by_workspace ON claim_ranking(workspace_id, visibility, retention_excluded_at, seq);
      CREATE INDEX claim_ranking_by_author ON claim_ranking(author_id, retention_excluded_at, seq);
      CREATE INDEX claim_ranking_by_project ON claim_ranking(project_id, retention_excluded_at, seq);
      CREATE INDEX claim_ranking_by_subject ON claim_ranking(subject_id, retention_excluded_at, seq);
    `,
  },
  {
    // 0020's `taken` column is dead: a take deletes its row (src/org/reserved-ids.ts) and nothing sets
    // it any more. A row still marked taken (the reserve's first version marked a take and deleted only
    // the ids the write reported) was handed out: it goes, so that it is never handed out again.
    // Rebuilt, not ALTER TABLE ... DROP COLUMN: SQLite refuses that here ("incomplete input": 0020's
    // comment after the last column is left dangling when the column's text is cut out).
    name: "0027_reserved_record_ids_without_taken",
    sql: `
      CREATE TABLE reserved_record_ids_next (
        record_id TEXT PRIMARY KEY,
        prefix TEXT NOT NULL                -- prj_, obs_ or claim_
      ) WITHOUT ROWID;
      INSERT INTO reserved_record_ids_next (record_id, prefix) SELECT record_id, prefix FROM reserved_record_ids WHERE taken = 0;
      DROP TABLE reserved_record_ids;
      ALTER TABLE reserved_record_ids_next RENAME TO reserved_record_ids;
    `,
  },
  {
    // An event about a workspace's record (observation.appended, claim.*) is read like that workspace's
    // team records: the event carries the record's workspace (fixed, like its project's). Existing
    // events take it from their record; events of other resources, and of records without one, stay NULL.
    name: "0028_event_workspaces",
    sql: `
      ALTER TABLE events ADD COLUMN workspace_id TEXT;
      UPDATE events SET workspace_id = (SELECT o.workspace_id FROM observations o WHERE o.observation_id = events.resource_id)
        WHERE resource_type = 'observation'
          AND resource_id IN (SELECT observation_id FROM observations
            WHERE project_id IN (SELECT project_id FROM projects WHERE workspace_id IS NOT NULL));
      UPDATE events SET workspace_id = (SELECT c.workspace_id FROM claims c WHERE c.claim_id = events.resource_id)
        WHERE resource_type = 'claim'
          AND resource_id IN (SELECT claim_id FROM claims WHERE workspace_id IS NOT NULL);
    `,
  },
  {
    // A dashboard account stops for good when the principal that created it (directly or through
    // principals it created) leaves the organization or loses its last credential: its sessions are
    // revoked in the same transaction, and its logins answer like a wrong password. The username stays taken.
    name: "0029_account_disabled",
    sql: `
      ALTER TABLE operator_accounts ADD COLUMN disabled_at TEXT;
    `,
  },
  {
    // Webhook deliveries are retried by the service (src/domains/webhooks/delivery.ts). Each hook keeps
    // its own position in the event log, so a paused hook resumes where it stopped: it starts where the
    // organization-wide background cursor stood. Rows left 'pending' are retried from now on.
    name: "0030_webhook_retries",
    sql: `
      ALTER TABLE webhooks ADD COLUMN scanned_seq INTEGER NOT NULL DEFAULT 0;
      UPDATE webhooks SET scanned_seq = max(from_seq, coalesce((SELECT CAST(value AS INTEGER) FROM org_meta WHERE name = 'webhook_cursor'), 0));
      DELETE FROM org_meta WHERE name = 'webhook_cursor';
      CREATE INDEX deliveries_due ON deliveries(next_retry_at) WHERE status = 'pending';
    `,
  },
  {
    // Who minted each key: removing a principal (or revoking its last credential) also revokes the keys
    // it or the principals it created minted for other principals, which would otherwise keep its
    // authority alive. Keys minted before this column existed keep NULL (creator unknown).
    name: "0031_key_creators",
    sql: `
      ALTER TABLE api_keys ADD COLUMN created_by TEXT;
      CREATE INDEX api_keys_by_creator ON api_keys(created_by) WHERE created_by IS NOT NULL;
    `,
  },
  {
    // Whether each exchange was signed by the peer: an owner's or admin's "*" credential may pull
    // unsigned (src/domains/federation/exchange.ts), and the log tells such pulls apart. Pushes are
    // always signed; pulls logged before this column existed stay NULL (not known).
    name: "0032_federation_log_signed",
    sql: `
      ALTER TABLE federation_log ADD COLUMN signed INTEGER;
      UPDATE federation_log SET signed = 1 WHERE operation = 'push';
    `,
  },
  {
    // A hook's failure_count counts deliveries that failed for good (every attempt used); a count kept
    // from when it counted failed attempts would disable hooks early, so active and paused hooks start
    // again at 0 (a disabled hook keeps its count). A failed delivery records why it failed (the rows
    // already failed either ran out of attempts or belonged to a hook that was disabled). The alarm
    // claims each hook's earliest due retries: deliveries_due_by_hook.
    name: "0033_webhook_failure_count",
    sql: `
      UPDATE webhooks SET failure_count = 0 WHERE status != 'disabled';
      ALTER TABLE deliveries ADD COLUMN failure_reason TEXT;
      UPDATE deliveries SET failure_reason = CASE WHEN attempts >= 5 THEN 'attempts_exhausted' ELSE 'hook_disabled' END
        WHERE status = 'failed';
      CREATE INDEX deliveries_due_by_hook ON deliveries(webhook_id, next_retry_at) WHERE status = 'pending';
    `,
  },
  {
    // Event time: when what an observation records happened (given on append, default its created_at),
    // and a claim's, the latest of its sources' (set at consolidation). Observations written before take
    // their created_at, claims the latest of their sources' (their created_at without one). Every writer
    // sets it from here on.
    name: "0034_event_time",
    sql: `
      ALTER TABLE observations ADD COLUMN occurred_at TEXT;
      UPDATE observations SET occurred_at = created_at;
      ALTER TABLE claims ADD COLUMN occurred_at TEXT;
      UPDATE claims SET occurred_at = coalesce((SELECT max(o.occurred_at) FROM claim_sources s
        JOIN observations o ON o.observation_id = s.observation_id WHERE s.claim_id = claims.claim_id), created_at);
      -- Ranking reads a candidate's event time from its claim_ranking row: the copy and its triggers take it.
      ALTER TABLE claim_ranking ADD COLUMN occurred_at TEXT;
      UPDATE claim_ranking SET occurred_at = (SELECT c.occurred_at FROM claims c WHERE c.seq = claim_ranking.seq);
      DROP TRIGGER claim_ranking_on_insert;
      DROP TRIGGER claim_ranking_on_update;
      CREATE TRIGGER claim_ranking_on_insert AFTER INSERT ON claims BEGIN
        INSERT INTO claim_ranking (seq, claim_id, subject_id, project_id, kind, trust, status, valid_to, retention_excluded_at, visibility, workspace_id, author_id, created_at, occurred_at, bytes, stems)
          VALUES (NEW.seq, NEW.claim_id, NEW.subject_id, NEW.project_id, NEW.kind, NEW.trust, NEW.status, NEW.valid_to, NEW.retention_excluded_at, NEW.visibility, NEW.workspace_id, NEW.author_id, NEW.created_at, NEW.occurred_at, length(CAST(NEW.statement AS BLOB)), NULL);
      END;
      CREATE TRIGGER claim_ranking_on_update AFTER UPDATE ON claims BEGIN
        UPDATE claim_ranking SET claim_id = NEW.claim_id, subject_id = NEW.subject_id, project_id = NEW.project_id, kind = NEW.kind, trust = NEW.trust, status = NEW.status, valid_to = NEW.valid_to, retention_excluded_at = NEW.retention_excluded_at, visibility = NEW.visibility, workspace_id = NEW.workspace_id, author_id = NEW.author_id, created_at = NEW.created_at, occurred_at = NEW.occurred_at, bytes = length(CAST(NEW.statement AS BLOB)) WHERE seq = NEW.seq;
      END;
    `,
  },
  {
    // The shared statistics per subject (records.ts sharedTermStats): a compile filtered to one subject
    // weighs a word by how many of that subject's shared claims (team, no workspace, not excluded by
    // retention) hold it. Backfilled from claims_fts, as 0019 built the organization's.
    name: "0035_subject_statistics",
    sql: `
      CREATE TABLE claim_subject_terms (
        subject_id TEXT NOT NULL,
        term TEXT NOT NULL,                 -- claims_fts term (stored form)
        claims INTEGER NOT NULL,            -- the subject's shared claims holding it
        PRIMARY KEY (subject_id, term)
      ) WITHOUT ROWID;
      CREATE TABLE claim_subject_corpus (
        subject_id TEXT PRIMARY KEY,
        claims INTEGER NOT NULL,            -- the subject's shared claims
        tokens INTEGER NOT NULL             -- their terms, counted with repeats
      ) WITHOUT ROWID;
      CREATE VIRTUAL TABLE backfill_subject_instances USING fts5vocab(claims_fts, 'instance');
      CREATE TABLE backfill_subject_shared AS SELECT seq, subject_id FROM claims
        WHERE visibility = 'team' AND workspace_id IS NULL AND retention_excluded_at IS NULL;
      -- fts5vocab can only be scanned: one pass, filtered by IN.
      CREATE TABLE backfill_subject_doc_terms AS SELECT doc, term, count(*) AS n FROM backfill_subject_instances
        WHERE doc IN (SELECT seq FROM backfill_subject_shared) GROUP BY doc, term;
      INSERT INTO claim_subject_terms (subject_id, term, claims)
        SELECT s.subject_id, d.term, count(*) FROM backfill_subject_doc_terms d JOIN backfill_subject_shared s ON s.seq = d.doc
         GROUP BY s.subject_id, d.term;
      INSERT INTO claim_subject_corpus (subject_id, claims, tokens)
        SELECT s.subject_id, count(*), coalesce(sum(t.n), 0) FROM backfill_subject_shared s
          LEFT JOIN (SELECT doc, sum(n) AS n FROM backfill_subject_doc_terms GROUP BY doc) t ON t.doc = s.seq GROUP BY s.subject_id;
      DROP TABLE backfill_subject_doc_terms;
      DROP TABLE backfill_subject_shared;
      DROP TABLE backfill_subject_instances;
    `,
  },
  {
    // The local index's size without counting its rows (src/vector/local-index.ts: above a bound it
    // keeps no in-memory copy), kept by triggers on every insert, delete and change of dimensions. And
    // every indexed record queued once more, so that its vector is upserted again with the metadata the
    // Vectorize ways filter on (src/vector/metadata.ts): a vector upserted without it matches
    // no way.
    name: "0036_vector_counts_and_metadata",
    sql: `
      CREATE TABLE local_vector_counts (
        dimensions INTEGER PRIMARY KEY,
        vectors INTEGER NOT NULL
      );
      INSERT INTO local_vector_counts (dimensions, vectors) SELECT dimensions, count(*) FROM local_vectors GROUP BY dimensions;
      CREATE TRIGGER local_vectors_counted_insert AFTER INSERT ON local_vectors BEGIN
        INSERT OR IGNORE INTO local_vector_counts (dimensions, vectors) VALUES (NEW.dimensions, 0);
        UPDATE local_vector_counts SET vectors = vectors + 1 WHERE dimensions = NEW.dimensions;
      END;
      CREATE TRIGGER local_vectors_counted_delete AFTER DELETE ON local_vectors BEGIN
        UPDATE local_vector_counts SET vectors = vectors - 1 WHERE dimensions = OLD.dimensions;
      END;
      CREATE TRIGGER local_vectors_counted_update AFTER UPDATE OF dimensions ON local_vectors
        WHEN OLD.dimensions <> NEW.dimensions BEGIN
        UPDATE local_vector_counts SET vectors = vectors - 1 WHERE dimensions = OLD.dimensions;
        INSERT OR IGNORE INTO local_vector_counts (dimensions, vectors) VALUES (NEW.dimensions, 0);
        UPDATE local_vector_counts SET vectors = vectors + 1 WHERE dimensions = NEW.dimensions;
      END;
      INSERT INTO outbox (topic, payload, created_at) SELECT 'index', record_id, indexed_at FROM indexed_records ORDER BY indexed_at;
      -- Made due now: the next alarm or write drains them (a quiet organization would otherwise wait for a write).
      INSERT OR REPLACE INTO org_meta (name, value) SELECT 'job_due:index_drain', '0' WHERE EXISTS (SELECT 1 FROM indexed_records);
    `,
  },
  {
    // A hook disabled by its creator's removal left its waiting retries pending, never to be sent: they
    // end failed, as a hook disabled by failures leaves them.
    name: "0037_disabled_hook_deliveries",
    sql: `
      UPDATE deliveries SET status = 'failed', next_retry_at = NULL, failure_reason = 'hook_disabled'
        WHERE status = 'pending' AND webhook_id IN (SELECT webhook_id FROM webhooks WHERE status = 'disabled');
    `,
  },
];
