//! Reads that span time, checked: each page of a paged read against the model's read at
//! the read's one time, the long scans' registered read points, and the history cutoff
//! the retention policy gave each compaction.
//!
//! - **A page** must hold exactly the rows the model's read of the whole SELECT at the
//!   read time has after the paging state's row, at most the page size of them, and hand
//!   on the last row's key exactly when it is full. So the pages of one read together
//!   are that read: no row twice, none missing, none from another time. A page's refusal
//!   is right only when its read time lies below a cutoff its replica compacted to
//!   (`snapshot_too_old`: between pages only the retention interval protects a read),
//!   or, for a long scan's page, when its replica lost the read point (`read_aborted`:
//!   it lost power, or installed a snapshot since). A long scan whose point is still
//!   registered is never `snapshot_too_old`.
//! - **The cutoff** of a compaction by retention policy, per tablet, must be at or below
//!   the replica's now less the retention interval, and at or below every read point a
//!   long scan holds on that replica's table (`retention.rs`: YugabyteDB's rule,
//!   restated here from the checker's own account of the scans).

use super::model::{self, ModelReply};
use super::{routing, shown, Checker, Found};
use crate::convert;
use crate::exec::{Compaction, Part};
use crate::failure::FailureKind;
use docsim_engine::{Error, HybridTime, Reply, TabletId};
use docsim_models::cql::{key_order, Cell};
use docsim_models::{DocId, ModelError};
use docsim_workloads::Op;

/// A SELECT's rows as the model answers them.
type Rows = Vec<Vec<(String, Cell)>>;

impl Checker {
    /// A page's read event (one tablet's, or a scan's).
    pub(super) fn page_event(&mut self, op: &Op, event: crate::exec::Event) -> Result<(), Found> {
        match event {
            crate::exec::Event::Read { tablet, node, result, read_ht, .. } => {
                self.page(op, &[(tablet, node, result)], read_ht)
            }
            crate::exec::Event::Scan { parts, read_ht, .. } => self.page(op, &parts, read_ht),
            other => unreachable!("not a read: {other:?}"),
        }
    }

    /// A page of a paged read (`op` is an [`Op::Page`]), served or refused.
    pub(super) fn page(
        &mut self,
        op: &Op,
        parts: &[Part],
        read_ht: HybridTime,
    ) -> Result<(), Found> {
        let Op::Page { table, op: select, size, after, hold, .. } = op else {
            unreachable!("a page's op is a page")
        };
        let node = parts.first().map_or(1, |(_, node, _)| *node);
        let scanned = self.models.tablets_reading(table, select);
        let continued = *hold && after.is_some();
        if let Some(e) = parts.iter().find_map(|(.., r)| r.as_ref().err()) {
            if routing(e.kind()) {
                // Not the model's business; a long scan ends with it all the same (the
                // client released its read point).
                *self.refused_reads.entry(e.kind().name()).or_default() += 1;
                self.scan_ended(node, &scanned, read_ht, continued);
                return Ok(());
            }
        }
        self.checked_reads += 1;
        *self.checked_by_node.entry(node).or_default() += 1;
        docsim_engine::probe::hit("page.read");
        let got = crate::exec::merged_reply(parts.iter().map(|(.., r)| r.clone()));
        let unregistered = parts
            .iter()
            .find(|(tablet, node, _)| !self.holds.contains_key(&(*node, tablet.clone(), read_ht)));
        let refusing = parts.iter().find(|(.., r)| r.is_err());
        let lost = continued && refusing.is_some_and(|r| unregistered.map(|u| &u.0) == Some(&r.0));
        if self.page_refusal_holds(refusing, continued && !lost, lost) {
            if lost {
                docsim_engine::probe::hit("page.read_aborted");
            }
            // A refused first page registered nothing (what it made it released).
            self.scan_ended(node, &scanned, read_ht, continued);
            return Ok(());
        }
        if continued && got.is_ok() && unregistered.is_some() {
            let want = vec!["error: read_aborted".to_owned()];
            return Err(Found::new(FailureKind::Select, want, shown_page(&got, read_ht)));
        }
        let select =
            Op::Cql { ht: op.time().unwrap_or(0), table: table.clone(), op: select.clone() };
        let want = self.model_page(&select, parts, read_ht, (*size, after.as_ref()));
        let agrees = match (&want, &got) {
            (Ok((rows, last)), Ok(Reply::Page { rows: g, last: gl })) => {
                let reply = ModelReply::Rows(rows.clone());
                model::reply_agrees(&reply, &Reply::Rows(g.clone()))
                    && *last == gl.as_ref().map(convert::doc_id)
            }
            (Err(m), Err(e)) => model::expected_kind(m) == e.kind(),
            _ => false,
        };
        if !agrees {
            let want = match want {
                Ok((rows, last)) => page_lines(&rows, read_ht, last.as_ref()),
                Err(m) => vec![format!("error: {}", model::expected_kind(&m))],
            };
            return Err(Found::new(FailureKind::Select, want, shown_page(&got, read_ht)));
        }
        match &got {
            Ok(Reply::Page { last: Some(_), .. }) if *hold && after.is_none() => {
                docsim_engine::probe::hit("page.read_point_held");
                for tablet in scanned {
                    *self.holds.entry((node, tablet, read_ht)).or_default() += 1;
                }
            }
            Ok(Reply::Page { last: Some(_), .. }) => {}
            _ if continued => self.scan_ended(node, &scanned, read_ht, true),
            _ => {}
        }
        Ok(())
    }

    /// Whether a page refused by `refusing` (a part) is refused rightly: a long scan
    /// that lost its read point there is `read_aborted` (`lost`, decided by the caller);
    /// any other page may be `snapshot_too_old` below its replica's highest cutoff, unless
    /// it is a long scan's whose read point is `registered` there.
    fn page_refusal_holds(&self, refusing: Option<&Part>, registered: bool, lost: bool) -> bool {
        let Some((tablet, node, Err(e))) = refusing else { return false };
        let (_, hi) = self.cutoffs.get(&(tablet.clone(), *node)).copied().unwrap_or_default();
        match e {
            Error::ReadAborted { .. } => lost,
            Error::SnapshotTooOld { read_ht, .. } if !registered && *read_ht < hi => {
                docsim_engine::probe::hit("page.snapshot_too_old");
                true
            }
            _ => false,
        }
    }

    /// A long scan ended (its last page, or a refusal): one registration of its read
    /// point gone from each tablet it registered on.
    fn scan_ended(&mut self, node: u64, tablets: &[TabletId], read_ht: HybridTime, hold: bool) {
        if !hold {
            return;
        }
        for tablet in tablets {
            let key = (node, tablet.clone(), read_ht);
            if let Some(count) = self.holds.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    self.holds.remove(&key);
                }
            }
        }
    }

    /// The model's page: the rows of the whole SELECT at `read_ht` (every tablet of the
    /// table in hash order, each as its replica stands) after the row `after`, at most
    /// `size`, and the last one's key when the page is full.
    fn model_page(
        &mut self,
        select: &Op,
        parts: &[Part],
        read_ht: HybridTime,
        (size, after): (usize, Option<&DocId>),
    ) -> Result<(Rows, Option<DocId>), ModelError> {
        let Op::Cql { table, .. } = select else { unreachable!("a SELECT") };
        let first_node = parts.first().map_or(1, |(_, node, _)| *node);
        let mut rows = Vec::new();
        let tablets = self.models.tablets_of(table);
        for tablet in &tablets {
            let node = parts.iter().find(|(t, ..)| t == tablet).map_or(first_node, |p| p.1);
            match self.models.read(tablet, node, select, read_ht)? {
                ModelReply::Rows(part) => rows.extend(part),
                other => unreachable!("a SELECT reads rows: {other:?}"),
            }
        }
        let columns = tablets.first().map(|t| self.models.key_columns(t)).unwrap_or_default();
        let key_of = |row: &Vec<(String, Cell)>| row_doc_id(row, &columns);
        // The rows after the paging state's row in key order (that row may read as none
        // now: an `ALTER TABLE` between pages can leave it no column of the current
        // schema).
        let after_it = |row: &Vec<(String, Cell)>| match (after, key_of(row)) {
            (None, _) => true,
            (Some(after), Some(key)) => key_order(&key, after) == std::cmp::Ordering::Greater,
            (Some(_), None) => false,
        };
        let start = rows.iter().position(after_it).unwrap_or(rows.len());
        let page: Vec<_> = rows.into_iter().skip(start).take(size).collect();
        let last = match page.len() == size {
            true => page.last().and_then(key_of),
            false => None,
        };
        Ok((page, last))
    }

    /// The cutoffs the retention policy gave a compaction of `node`, against the rule:
    /// none above the replica's now less the interval, none above a read point a long
    /// scan holds on that tablet there, none above the time since which its table's
    /// snapshots keep the history (the model's `kept_since`). A failure expects what the
    /// compaction prints with each tablet's cutoff as the rule gives it.
    pub(super) fn retention_holds(&self, node: u64, request: &Compaction) -> Result<(), Found> {
        use docsim_engine::retention::{Cutoff, HeldBy};
        let mut right = request.retained.clone();
        for (tablet, cutoff) in right.iter_mut() {
            if cutoff.held_by == HeldBy::Read {
                docsim_engine::probe::hit("retention.cutoff_held_by_read");
            }
            let by_clock = match cutoff.now.physical_us().checked_sub(request.retention_us) {
                Some(us) => HybridTime::new(us, cutoff.now.logical()),
                None => HybridTime::MIN,
            };
            let held = self.holds.keys().filter(|(n, t, _)| *n == node && t == tablet);
            *cutoff = match held.map(|(.., ht)| *ht).min() {
                Some(read) if read < by_clock => {
                    Cutoff { ht: read, held_by: HeldBy::Read, ..*cutoff }
                }
                _ => Cutoff { ht: by_clock, held_by: HeldBy::Retention, ..*cutoff },
            };
            // The history kept for restores, as the model states it, holds it lower still.
            match self.models.kept_since(tablet, node) {
                Some(kept) if kept < cutoff.ht => {
                    *cutoff = Cutoff { ht: kept, held_by: HeldBy::Snapshot, ..*cutoff }
                }
                _ => {}
            }
        }
        // The replica's safe time may hold a cutoff lower still (docsim's rule): the
        // checker takes its word for that term, never for a cutoff above the rule's.
        let held_lower = |(t, c): (&TabletId, &Cutoff)| {
            c.held_by == HeldBy::SafeTime && right.get(t).is_some_and(|r| c.ht <= r.ht)
        };
        let agrees = |(t, c): (&TabletId, &Cutoff)| right.get(t) == Some(c) || held_lower((t, c));
        if request.retained.iter().all(agrees) {
            return Ok(());
        }
        let prefix = if self.alone { String::new() } else { format!("node {node}: ") };
        let lines = |cutoffs| crate::exec::cutoff_lines(cutoffs).into_iter();
        let want = lines(&right).map(|l| format!("{prefix}{l}")).collect();
        let got = lines(&request.retained).map(|l| format!("{prefix}{l}")).collect();
        Err(Found::new(FailureKind::Retention, want, got))
    }

    /// Node `id` lost its registered read points (a power cut, or, for `tablet`'s table, a
    /// snapshot installed there).
    pub(super) fn read_points_lost(&mut self, id: u64, tablet: Option<&TabletId>) {
        self.holds.retain(|(node, t, _), _| *node != id || tablet.is_some_and(|only| t != only));
    }
}

/// A model row's document id, from its key columns' cells (hash key, clustering key);
/// `None` if one is not a value (a SELECT that did not project it).
fn row_doc_id(
    row: &[(String, Cell)],
    (hash, range): &(Vec<String>, Vec<(String, bool)>),
) -> Option<DocId> {
    let value = |name: &String| match row.iter().find(|(n, _)| n == name) {
        Some((_, Cell::Scalar(s))) => Some(s.clone()),
        _ => None,
    };
    let hashed = hash.iter().map(|n| value(n).map(docsim_models::Key::of));
    let range = range
        .iter()
        .map(|(n, desc)| value(n).map(|scalar| docsim_models::Key { scalar, desc: *desc }));
    Some(DocId {
        colocation: None,
        hashed: hashed.collect::<Option<_>>()?,
        range: range.collect::<Option<_>>()?,
    })
}

/// A page as the client printed it (the same lines as [`page_lines`]).
fn shown_page(got: &Result<Reply, Error>, read_ht: HybridTime) -> Vec<String> {
    match got {
        Ok(Reply::Page { rows, last }) => {
            docsim_engine::script::format_page(rows, read_ht, last.as_ref())
        }
        other => shown(other),
    }
}

/// A page as the model expects it printed.
fn page_lines(
    rows: &[Vec<(String, Cell)>],
    read_ht: HybridTime,
    last: Option<&DocId>,
) -> Vec<String> {
    let mut lines = model::reply_lines(&ModelReply::Rows(rows.to_vec()));
    lines.push(match last {
        Some(key) => format!("paging: @{read_ht} after={}", convert::doc_key(key)),
        None => "paging: done".to_owned(),
    });
    lines
}
