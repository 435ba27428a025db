//! Clients: writes through the replica that claims to lead (or the one a command names),
//! reads from any replica, and the catalog's tables. The executor's dispatch of every
//! command is here too ([`Cluster::execute`]).

use super::{tablet_name, Answer, Cluster, Event, Part, Pending, WRITE_TIMEOUT};
use crate::failure::FailureKind;
use docsim_engine::cql::{format_rows, parse_statement, CqlTable, Paging, Statement};
use docsim_engine::script::{format_get, At, Command, Route};
use docsim_engine::{
    Error, ErrorKind, HybridTime, Layout, MarkerMode, Reply, Request, Schema, TabletId,
};
use std::time::Duration;

/// What a long scan's first page made of its read point (`Cluster::hold_scan`).
enum Held {
    /// Registered on every replica the scan reads, at this time.
    At(HybridTime),
    /// Refused by the replica of one tablet (its part), at this time.
    Refused(HybridTime, Box<Part>),
    /// A tablet has no replica to ask.
    NoReplica(CommandError),
}

/// A client request as a command names it: its tablets (several, in hash order, for a
/// statement of a whole split table), the typed request, when.
#[derive(Clone)]
struct Client {
    tablets: Vec<TabletId>,
    request: Request,
    at: Option<At>,
    route: Route,
    /// A long scan's page: its read point registered from the first page to the last.
    hold: bool,
}

impl Cluster {
    /// Carry out one command; the command as recorded (a group of one's writes and reads
    /// with the times they took).
    pub(super) async fn execute(&mut self, command: Command) -> String {
        let (mut printed, start) = (Vec::new(), self.trace.len());
        let (recorded, error) = match self.client(&command) {
            Some(Ok(client)) => self.request(client, &command, &mut printed).await,
            Some(Err(e)) => (command.to_string(), Some(e)),
            None => (command.to_string(), self.other(&command, &mut printed).await),
        };
        // In a group of one an error fails the script unless an `expect` takes it back
        // (the script is a function of its text: the same errors come back). A replicated
        // group's errors are its answers (which replica serves, a lease not there yet, a
        // fault's aftermath): they vary with timing, and what fails a replicated script
        // is an `expect` line or a check.
        let counted =
            error.as_ref().filter(|e| !self.replicated() || matches!(e, CommandError::Check(_)));
        self.last_error_counted = counted.is_some();
        if !self.replicated() {
            // A group of one prints the memory flushes its command's writes made (after
            // what they applied); a replicated group notes them as they happen.
            let _ = self.collect();
            printed.append(&mut self.memory_lines);
        }
        if let Some(e) = &error {
            printed.push(format!("error: {e}"));
        }
        self.failed_commands += usize::from(counted.is_some());
        // The script expects a counted error (by kind): a reproducer passes without its
        // bug.
        let recorded = match counted {
            Some(CommandError::Check(_)) | None => recorded,
            Some(e) => format!("{recorded}\nexpect error: {}", e.kind_name()),
        };
        let restarts = std::mem::take(&mut self.restarts_full);
        self.trace.extend(printed);
        if !matches!(command, Command::Expect(_)) {
            // Every line the command printed, a replicated group's notes among them.
            let lines = self.trace[start..].to_vec();
            let kind = error.as_ref().map(|e| e.kind_name());
            self.last = docsim_engine::script::Last::new(lines, kind, restarts);
        }
        recorded
    }

    /// A command that is a client's request: its tablets and typed request (or why it
    /// does not parse or names no table); `None` for every other command.
    fn client(&mut self, command: &Command) -> Option<Result<Client, CommandError>> {
        let docs = |request, at, route| {
            Ok(Client { tablets: vec![TabletId::Docs], request, at, route, hold: false })
        };
        let markers = self.markers;
        Some(match command.clone() {
            Command::Write { write, ht, route } => {
                let request = Request::Write { writes: vec![write], markers };
                docs(request, ht.map(At::Ht), route)
            }
            Command::Batch { ht, writes, route } => {
                docs(Request::Write { writes, markers }, ht.map(At::Ht), route)
            }
            Command::DefaultTtl { ttl_us, ht } => {
                let ttl_ms = ttl_us.map(|us| us.div_ceil(1000));
                docs(Request::DefaultTtl(ttl_ms), ht.map(At::Ht), Route::default())
            }
            Command::Get { path, at, table: None, from } => {
                let route = Route { node: from, nowait: false };
                docs(Request::Get { path }, Some(at), route)
            }
            Command::Get { path, at, table: Some(name), from } => {
                let route = Route { node: from, nowait: false };
                self.tablets_named(&name).map_err(CommandError::Node).map(|tablets| {
                    let tablet = docsim_engine::route::path(&tablets, &path);
                    let request = Request::Get { path };
                    Client { tablets: vec![tablet], request, at: Some(at), route, hold: false }
                })
            }
            Command::Cql { at, statement, route } => match parse_statement(&statement) {
                Ok(s) => self.cql_tablets(&s).map(|tablets| Client {
                    tablets,
                    request: Request::Cql(s),
                    at,
                    route,
                    hold: false,
                }),
                Err(e) => Err(CommandError::Syntax(e.to_string())),
            },
            Command::Page { paging, route, .. }
                if paging.hold && route.node.is_none() && self.replicated() =>
            {
                let why = "a long scan (`hold`) in a replicated group names its node: from=<i>";
                Err(CommandError::Syntax(why.into()))
            }
            Command::Page { at, paging, statement, route } => match parse_statement(&statement) {
                Ok(s @ Statement::Select { .. }) => self.cql_tablets(&s).map(|tablets| {
                    let page = Paging { size: paging.size, after: paging.after };
                    let request = Request::Page(s, page);
                    Client { tablets, request, at, route, hold: paging.hold }
                }),
                Ok(_) => Err(CommandError::Syntax("a page is a page of a SELECT".into())),
                Err(e) => Err(CommandError::Syntax(e.to_string())),
            },
            Command::SnapshotWrite { op, table, ht, route } => {
                self.table_entry(&table, Request::Snapshot(op), ht, route)
            }
            Command::Restore { target, table, ht, route } => {
                self.table_entry(&table, Request::Restore(target), ht, route)
            }
            Command::Redis { at, command, route } => {
                match docsim_engine::redis::Command::parse(&command) {
                    Ok(c) => docs(Request::Redis(c), at, route),
                    Err(e) => Err(CommandError::Syntax(e.to_string())),
                }
            }
            _ => return None,
        })
    }

    /// `request` proposed to every tablet of table `name` and waited for, as `command`
    /// (an import's restore): the error that stopped it, if one did.
    pub(super) async fn table_request(
        &mut self,
        name: &str,
        request: Request,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Option<CommandError> {
        match self.table_entry(name, request, None, Route::default()) {
            Ok(client) => self.request(client, command, printed).await.1,
            Err(e) => Some(e),
        }
    }

    /// A request every tablet of table `name` takes as an entry (a snapshot, a restore).
    fn table_entry(
        &self,
        name: &str,
        request: Request,
        ht: Option<HybridTime>,
        route: Route,
    ) -> Result<Client, CommandError> {
        let tablets = self.tablets_named(name).map_err(CommandError::Node)?;
        Ok(Client { tablets, request, at: ht.map(At::Ht), route, hold: false })
    }

    /// The tablets of its table a statement goes to (the catalog's partitioning).
    fn cql_tablets(&self, statement: &Statement) -> Result<Vec<TabletId>, CommandError> {
        let tablets = self.tablets_named(statement.table()).map_err(CommandError::Node)?;
        let schema = self.catalog.iter().find(|(id, _)| *id == tablets[0]).map(|(_, s)| s);
        let table = schema.and_then(Schema::cql).expect("a table's tablet has its table");
        let plants = self.setup.plants;
        Ok(docsim_engine::route::statement(&tablets, table, statement, plants))
    }

    /// A client's request: a read, or a write to each of its tablets in turn (the first
    /// refusal stops it). The command as recorded.
    async fn request(
        &mut self,
        client: Client,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> (String, Option<CommandError>) {
        if client.tablets == [TabletId::Docs] {
            self.docs_tablet();
            if !self.catalog.iter().any(|(id, _)| *id == TabletId::Docs) {
                // No node ran to create it.
                let error = CommandError::Node(Error::Down { cause: None });
                return (command.to_string(), Some(error));
            }
        }
        if matches!(client.at, Some(At::Ht(_))) && !client.request.is_read() {
            self.explicit_times = true;
        }
        if client.request.is_read() {
            return self.read(client, command, printed);
        }
        if let [tablet] = client.tablets.as_slice() {
            return match self.target(tablet, &client.route) {
                Ok(node) => self.write(client, node, command, printed).await,
                Err(e) => (command.to_string(), Some(e)),
            };
        }
        self.write_every_tablet(client, command, printed).await
    }

    /// A write of a whole split table (an ALTER TABLE): proposed to every tablet's leader
    /// before any is waited for, as the master sends a schema change to every tablet; the
    /// first refusal stops it. The checker sees every proposal before what a replica
    /// applies after it.
    async fn write_every_tablet(
        &mut self,
        client: Client,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> (String, Option<CommandError>) {
        let key = |p: &super::Pending| (p.tablet.clone(), p.op_id);
        let before: Vec<_> = self.pending.iter().map(key).collect();
        let mut recorded = command.to_string();
        for tablet in &client.tablets {
            let node = match self.target(tablet, &client.route) {
                Ok(node) => node,
                Err(e) => return (recorded, Some(e)),
            };
            let mut one = Client { tablets: vec![tablet.clone()], ..client.clone() };
            one.route.nowait = true;
            let error;
            (recorded, error) = self.write(one, node, command, printed).await;
            if error.is_some() {
                return (recorded, error);
            }
        }
        let ours: Vec<_> = self.pending.iter().map(key).filter(|k| !before.contains(k)).collect();
        for (_, op_id) in ours.into_iter().filter(|_| !client.route.nowait) {
            self.wait_for(op_id).await;
        }
        (recorded, None)
    }

    /// The node a request of `tablet` goes to: the one the command names, else the
    /// newest leader heard of (a group of one: node 1, whether it runs or not: it says
    /// why it does not).
    fn target(&self, tablet: &TabletId, route: &Route) -> Result<u64, CommandError> {
        let alone = (!self.replicated()).then_some(1);
        let guess = route.node.or_else(|| self.leader_guess(tablet)).or(alone);
        let Some(node) = guess else {
            return Err(CommandError::NoLeader(tablet_name(tablet)));
        };
        match node as usize > self.slots.len() {
            true => Err(CommandError::NoNode(node)),
            false => Ok(node),
        }
    }

    /// The document tablet, created on every node on first use (the master's), once a
    /// node runs to take it.
    pub(super) fn docs_tablet(&mut self) {
        let exists = self.catalog.iter().any(|(id, _)| *id == TabletId::Docs);
        if exists || !self.ids().any(|id| self.running(id)) {
            return;
        }
        self.create(TabletId::Docs, Schema::Docs { default_ttl_ms: None });
    }

    /// Create `tablet` on every node (a node that is down creates it at its restart; one
    /// whose disk fails it, an injected fault, has it down until its restart).
    fn create(&mut self, tablet: TabletId, schema: Schema) {
        self.catalog.push((tablet.clone(), schema.clone()));
        self.histories.entry(tablet.clone()).or_default();
        for id in self.ids().collect::<Vec<_>>() {
            let now_us = self.now_us(id);
            let created = self.slot(id).node.create_tablet(tablet.clone(), schema.clone(), now_us);
            let injected = |e: &Error| matches!(e.kind(), ErrorKind::DiskFull | ErrorKind::Io);
            match created {
                Err(e) if !injected(&e) => {
                    let why = format!("node {id} does not create {}: {e}", tablet_name(&tablet));
                    self.fail(crate::failure::Broken::new(FailureKind::ReplicaFailed, why));
                }
                _ => {}
            }
        }
    }

    /// `table CREATE TABLE ...`: a table in the catalog, its rows stored as the layout says.
    fn create_table(&mut self, statement: &str) -> Result<(), CommandError> {
        let mut table =
            CqlTable::parse(statement).map_err(|e| CommandError::Syntax(e.to_string()))?;
        table.packed_rows = match self.layout {
            Layout::Declared => table.packed_rows,
            Layout::Packed | Layout::Entity => true,
            Layout::Unpacked => false,
        };
        table.entity_rows = self.layout == Layout::Entity;
        let forced = self.setup.storage.first().and_then(|s| s.tablets);
        table.tablets = forced.unwrap_or(table.tablets);
        self.create_table_as(table)
    }

    /// A table in the catalog as `table` declares it, layout and tablets included.
    pub(super) fn create_table_as(&mut self, table: CqlTable) -> Result<(), CommandError> {
        if self.catalog.iter().any(|(id, _)| id.table_name() == Some(&table.name)) {
            return Err(CommandError::Node(Error::TableExists(table.name)));
        }
        if !self.ids().any(|id| self.running(id)) {
            return Err(CommandError::Node(Error::Down { cause: None }));
        }
        // The master's CreateTable: a tablet per hash range, each a group of its own.
        for part in docsim_engine::Part::all(table.tablets) {
            let tablet = TabletId::Table(table.name.clone(), part);
            self.create(tablet, Schema::table(table.clone()));
        }
        Ok(())
    }

    /// A read of each of the client's tablets (several: a scan of a split table, each
    /// tablet at its own leader, all at the time the first one took): served (the rows
    /// printed in hash order) or refused.
    fn read(
        &mut self,
        client: Client,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> (String, Option<CommandError>) {
        let mut at = client.at.unwrap_or(At::Now { ahead_us: 0 });
        let mut parts = Vec::new();
        let page = match &client.request {
            Request::Page(statement, paging) => Some((statement, paging)),
            _ => None,
        };
        // Whether this request holds a long scan's read point: a later page's, or a first
        // page's once registered everywhere (a refused one released what it made).
        let mut holds = client.hold && page.is_some_and(|(_, paging)| paging.after.is_some());
        if client.hold && page.is_some_and(|(_, paging)| paging.after.is_none()) {
            match self.hold_scan(&client, at) {
                Held::At(read_ht) => (at, holds) = (At::Ht(read_ht), true),
                Held::Refused(read_ht, part) => {
                    at = At::Ht(read_ht);
                    parts.push(*part);
                }
                Held::NoReplica(e) => return (command.to_string(), Some(e)),
            }
        }
        if parts.is_empty() {
            match self.read_tablets(&client, page, &mut at) {
                Ok(read) => parts = read,
                Err(e) => return (command.to_string(), Some(e)),
            }
        }
        let At::Ht(read_ht) = at else { unreachable!("a read took a time") };
        let nodes: Vec<u64> = parts.iter().map(|(_, node, _)| *node).collect();
        let result = super::merged_reply(parts.iter().map(|(.., r)| r.clone()));
        if holds && !matches!(result, Ok(Reply::Page { last: Some(_), .. })) {
            self.release_scan(&client, read_ht); // the long scan ended
        }
        let request = client.request.clone();
        self.events.push(match <[_; 1]>::try_from(parts) {
            Ok([(tablet, node, result)]) => Event::Read { tablet, node, request, read_ht, result },
            Err(parts) => Event::Scan { parts, request, read_ht },
        });
        let recorded = self.recorded_read(command, at);
        match result {
            Ok(reply) => {
                self.counts.reads_served += 1;
                let prefix = super::read_prefix(self.replicated(), &nodes);
                let lines = reply_lines(&client.request, read_ht, &reply);
                printed.extend(lines.into_iter().map(|l| format!("{prefix}{l}")));
                (recorded, None)
            }
            Err(e) => {
                *self.counts.reads_refused.entry(e.kind().name()).or_default() += 1;
                (recorded, Some(CommandError::Node(e)))
            }
        }
    }

    /// The parts of a read: each of the client's tablets in hash order, all at the time
    /// the first one took (`at` becomes it), until one refuses. A page reads them until
    /// it holds its rows, from the one holding its paging state's row (YugabyteDB's
    /// paging state names the next partition key: the tablets before it hold no row
    /// after it).
    fn read_tablets(
        &mut self,
        client: &Client,
        page: Option<(&Statement, &Paging)>,
        at: &mut At,
    ) -> Result<Vec<Part>, CommandError> {
        let mut parts = Vec::new();
        let mut remaining = page.map_or(usize::MAX, |(_, paging)| paging.size);
        let from = match page.and_then(|(_, paging)| paging.after.as_ref()) {
            Some(after) if client.tablets.len() > 1 => {
                let path = docsim_engine::DocPath::new(after.clone(), vec![]);
                let owner = docsim_engine::route::path(&client.tablets, &path);
                client.tablets.iter().position(|t| *t == owner).unwrap_or(0)
            }
            _ => 0,
        };
        for tablet in &client.tablets[from..] {
            let request = match page {
                Some((statement, paging)) => {
                    let paging = Paging { size: remaining, after: paging.after.clone() };
                    Request::Page(statement.clone(), paging)
                }
                None => client.request.clone(),
            };
            let node = self.target(tablet, &client.route)?;
            let read = self.read_one(tablet, (&request, client.hold), *at, node);
            let (read_ht, result) = read.map_err(CommandError::Node)?;
            *at = At::Ht(read_ht);
            let (refused, full) = match &result {
                Err(_) => (true, false),
                Ok(Reply::Page { rows, last }) => {
                    remaining -= rows.len();
                    (false, last.is_some())
                }
                Ok(_) => (false, false),
            };
            parts.push((tablet.clone(), node, result));
            if refused || full {
                break; // the scan is refused, or the page is full
            }
        }
        Ok(parts)
    }

    /// A read command as recorded: a group of one's with the time it took.
    fn recorded_read(&self, command: &Command, at: At) -> String {
        match (self.replicated(), at) {
            (false, At::Ht(ht)) => with_time(command, ht).to_string(),
            _ => command.to_string(),
        }
    }

    /// A read of `tablet` at `node`: the time it read at, and the reply or refusal; an
    /// error when the node has no running replica of it.
    fn read_one(
        &mut self,
        tablet: &TabletId,
        (request, held): (&Request, bool),
        at: At,
        node: u64,
    ) -> Result<(HybridTime, Result<Reply, Error>), Error> {
        let now_us = self.now_us(node);
        let mut slot = self.slot(node);
        let replica = slot.node.replica_mut(tablet)?;
        let read_ht = match at {
            At::Ht(ht) => ht,
            At::Now { ahead_us } => replica.now_ht(now_us).add_micros(ahead_us),
            At::Safe => replica.safe_time(),
        };
        let read = || match request {
            Request::Page(..) => replica.read_page(request, read_ht, now_us, held),
            _ => replica.read(request, read_ht, now_us),
        };
        Ok((read_ht, crate::cost::timed(crate::cost::Part::ClientCalls, read)))
    }

    /// A long scan's first page: its read point (the time it reads at) registered on the
    /// replica of every tablet it will read, before it reads any (`ScopedReadOperation`
    /// for the scan's life). A replica that refuses (a read time below its cutoff) refuses
    /// the scan, with the points made released.
    fn hold_scan(&mut self, client: &Client, at: At) -> Held {
        let mut read_ht = None;
        for (i, tablet) in client.tablets.iter().enumerate() {
            let node = match self.target(tablet, &client.route) {
                Ok(node) => node,
                Err(e) => return Held::NoReplica(e),
            };
            let now_us = self.now_us(node);
            let mut slot = self.slot(node);
            let held = slot.node.replica_mut(tablet).and_then(|replica| {
                let ht = *read_ht.get_or_insert_with(|| match at {
                    At::Ht(ht) => ht,
                    At::Now { ahead_us } => replica.now_ht(now_us).add_micros(ahead_us),
                    At::Safe => replica.safe_time(),
                });
                replica.hold_read(ht).map(|()| ht)
            });
            drop(slot);
            if let Err(e) = held {
                let made = Client { tablets: client.tablets[..i].to_vec(), ..client.clone() };
                let Some(ht) = read_ht else { return Held::NoReplica(CommandError::Node(e)) };
                self.release_scan(&made, ht);
                return Held::Refused(ht, Box::new((tablet.clone(), node, Err(e))));
            }
        }
        Held::At(read_ht.expect("a table has a tablet"))
    }

    /// A long scan ended (its last page, or a refusal): its read point released on the
    /// replica of each of its tablets that still holds it.
    fn release_scan(&mut self, client: &Client, read_ht: HybridTime) {
        for tablet in &client.tablets {
            let Ok(node) = self.target(tablet, &client.route) else { continue };
            if let Ok(replica) = self.slot(node).node.replica_mut(tablet) {
                replica.release_read(read_ht);
            }
        }
    }

    /// A write sent to `node`: proposed there and answered (once applied), or refused.
    async fn write(
        &mut self,
        client: Client,
        node: u64,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> (String, Option<CommandError>) {
        let now_us = self.now_us(node);
        let (proposed, ht, incarnation) = {
            let mut slot = self.slot(node);
            let incarnation = slot.incarnation;
            let replica = match slot.node.replica_mut(&client.tablets[0]) {
                Ok(replica) => replica,
                Err(e) => return (command.to_string(), Some(CommandError::Node(e))),
            };
            let ht = match client.at {
                Some(At::Ht(ht)) => ht,
                _ => replica.now_ht(now_us),
            };
            let propose = || replica.propose(&client.request, Some(ht), now_us);
            (crate::cost::timed(crate::cost::Part::ClientCalls, propose), ht, incarnation)
        };
        let recorded = match self.replicated() {
            true => command.to_string(),
            false => with_time(command, ht).to_string(),
        };
        let tablet = client.tablets[0].clone();
        let proposed = match proposed {
            Ok(proposed) => proposed,
            Err(error) => {
                let kind = error.kind().name();
                *self.counts.writes_refused.entry(kind).or_default() += 1;
                self.events.push(Event::Refused { tablet, node, ht, error: error.clone() });
                return (recorded, Some(self.refusal(node, error)));
            }
        };
        let reply = proposed.reply.clone();
        self.events.push(Event::Proposed {
            tablet: tablet.clone(),
            node,
            op_id: proposed.op_id,
            ht,
            reply: reply.clone(),
        });
        let Some(op_id) = proposed.op_id else {
            printed.extend(reply_lines(&client.request, ht, &reply));
            return (recorded, None);
        };
        if let Err(broken) = self.histories.entry(tablet.clone()).or_default().proposed(op_id, ht) {
            self.fail(broken);
        }
        let deadline = crate::simulated_now() + WRITE_TIMEOUT;
        self.pending.push(Pending { tablet: tablet.clone(), node, incarnation, deadline, op_id });
        if let Some(error) = self.persist(&tablet, node) {
            let cut = Event::Cut { tablet: tablet.clone(), node, op_id, error: error.clone() };
            self.events.push(cut);
            self.answer_now(op_id, Answer::Unanswered);
            return (recorded, Some(self.refusal(node, error)));
        }
        if !client.route.nowait {
            self.wait_for(op_id).await;
        }
        if self.answered(&tablet, op_id) == Some(Answer::Acked) {
            printed.extend(reply_lines(&client.request, ht, &reply));
        }
        (recorded, None)
    }

    /// The proposal's persist at its leader (`process`): the error that stopped it, if
    /// any (a power cut that fired there takes the node down).
    fn persist(&mut self, tablet: &TabletId, node: u64) -> Option<Error> {
        let replicated = self.replicated();
        let mut slot = self.slot(node);
        let slot = &mut *slot;
        let process = || slot.node.process(tablet);
        match crate::cost::timed(crate::cost::Part::ClientCalls, process) {
            Ok(out) => {
                slot.outbox.extend(out.into_iter().map(|e| (tablet.clone(), e)));
                None
            }
            Err(e) => {
                // A power cut took the node down; a failed log write stops a replicated
                // node too (fail-stop, as `world::with_node` says). A group of one keeps
                // the engine's `tablet is down` answers until the script restarts it.
                let fatal = matches!(e.kind(), ErrorKind::Io | ErrorKind::DiskFull);
                if e.kind() == ErrorKind::Crashed || (fatal && replicated) {
                    slot.crashed = true;
                }
                Some(e)
            }
        }
    }

    /// Answer the pending write `op_id` now.
    fn answer_now(&mut self, op_id: docsim_engine::OpId, answer: Answer) {
        let Some(at) = self.pending.iter().position(|p| p.op_id == op_id) else { return };
        let p = self.pending.remove(at);
        self.answer(p, answer);
    }

    /// The answer a proposal got, if any.
    fn answered(&self, tablet: &TabletId, op_id: docsim_engine::OpId) -> Option<Answer> {
        self.histories.get(tablet)?.proposals.get(&op_id)?.answer
    }

    /// Wait until the write `op_id` is answered (acknowledged, timed out, or its node
    /// crashed), or a check failed.
    async fn wait_for(&mut self, op_id: docsim_engine::OpId) {
        loop {
            let _ = self.collect();
            self.settle(false);
            if self.broken.is_some() || !self.pending.iter().any(|p| p.op_id == op_id) {
                return;
            }
            madsim::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// A refused write as printed: routing refusals name the node in a replicated group.
    fn refusal(&self, node: u64, error: Error) -> CommandError {
        match self.replicated() {
            true => CommandError::At(node, error),
            false => CommandError::Node(error),
        }
    }

    /// Every command that is no client's request; the error it prints, if any.
    async fn other(
        &mut self,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Option<CommandError> {
        match command {
            Command::Header(_) | Command::Expect(_) => None,
            Command::Markers(mode) => {
                self.markers = *mode;
                None
            }
            Command::Layout(layout) => {
                self.layout = *layout;
                None
            }
            Command::Memstore(limit) => {
                self.memstore_limit = *limit;
                for id in self.ids().collect::<Vec<_>>() {
                    self.slot(id).node.set_memstore_limit(*limit);
                }
                None
            }
            Command::Table(statement) => self.create_table(statement).err(),
            Command::Backup(op) => self.backup(op, command, printed).await,
            _ => self.node_or_network(command, printed).await,
        }
    }
}

/// The command with the time it took (a group of one's record: contract form).
fn with_time(command: &Command, ht: HybridTime) -> Command {
    let mut command = command.clone();
    match &mut command {
        Command::Write { ht: t, .. }
        | Command::Batch { ht: t, .. }
        | Command::SnapshotWrite { ht: t, .. }
        | Command::Restore { ht: t, .. }
        | Command::DefaultTtl { ht: t, .. } => *t = Some(ht),
        Command::Get { at, .. } => *at = At::Ht(ht),
        Command::Cql { at, .. } | Command::Redis { at, .. } | Command::Page { at, .. } => {
            *at = Some(At::Ht(ht))
        }
        _ => {}
    }
    command
}

/// What a request's reply prints.
pub fn reply_lines(request: &Request, ht: HybridTime, reply: &Reply) -> Vec<String> {
    match (request, reply) {
        (Request::Get { path }, Reply::Document(doc)) => vec![format_get(path, ht, doc.as_ref())],
        (_, Reply::Rows(rows)) => format_rows(rows),
        (_, Reply::Page { rows, last }) => {
            docsim_engine::script::format_page(rows, ht, last.as_ref())
        }
        (_, Reply::Redis(reply)) => reply.to_string().lines().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Why a command failed: its error as printed, and the kind `expect error:` names.
#[derive(Clone, Debug)]
pub enum CommandError {
    /// A node refused it.
    Node(Error),
    /// Node `i` of a replicated group refused it.
    At(u64, Error),
    /// Its CQL or Redis text does not parse.
    Syntax(String),
    /// No replica of the tablet claims to lead.
    NoLeader(String),
    /// The command names a node the group does not have.
    NoNode(u64),
    /// A check failed (the run's model-free checks).
    Check(String),
}

impl CommandError {
    /// The kind `expect error: <kind>` names.
    pub fn kind_name(&self) -> &'static str {
        match self {
            CommandError::Node(e) | CommandError::At(_, e) => e.kind().name(),
            CommandError::Syntax(_) => "syntax_error",
            CommandError::NoLeader(_) => "not_leader",
            CommandError::NoNode(_) | CommandError::Check(_) => "invalid_request",
        }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Node(e) => write!(f, "{e}"),
            CommandError::At(node, e) => write!(f, "node {node}: {}: {e}", e.kind()),
            CommandError::Syntax(why) => f.write_str(why),
            CommandError::NoLeader(tablet) => write!(f, "no replica of {tablet} claims to lead"),
            CommandError::NoNode(id) => write!(f, "no node {id}"),
            CommandError::Check(why) => f.write_str(why),
        }
    }
}

impl Cluster {
    /// The replica a client sends a write of `tablet` to when the script names none.
    pub fn write_target(&self, tablet: &TabletId) -> Option<u64> {
        self.leader_guess(tablet)
    }

    /// The current marker mode (a run's checker needs it with each write).
    pub fn markers(&self) -> MarkerMode {
        self.markers
    }

    /// The CQL statement of a table's tablet, parsed (for the checker).
    pub fn statement(text: &str) -> Option<Statement> {
        parse_statement(text).ok()
    }
}
