//! Which tablets a request goes to: the client's half of YugabyteDB's partitioning (its
//! meta cache finds the tablet whose partition holds the key's hash: `YBPartition`,
//! `MetaCache::LookupTabletByKey`). A statement with its whole hash key goes to the
//! tablet owning the key's hash; one of the whole table (a SELECT without the hash key,
//! an ALTER TABLE) to every tablet in hash order. The document tablet is never split.
//!
//! Pure functions of the catalog's tablet ids, so the engine's synchronous runner and the
//! simulator's clients route alike.

use crate::canary::{Plant, Plants};
use crate::cql::{partition_hash, CqlTable, Statement};
use crate::encoding::DocPath;
use crate::error::{Error, Result};
use crate::ids::{Part, TabletId};

/// The tablets `name` names, in hash order: `t` every tablet of table t, `t/i` its tablet
/// i alone. A table no tablet belongs to is `no such table`; an index it has not, an
/// invalid request.
pub fn named<'a>(ids: impl IntoIterator<Item = &'a TabletId>, name: &str) -> Result<Vec<TabletId>> {
    let (table, index) = match name.split_once('/') {
        Some((table, index)) => match index.parse::<u16>() {
            Ok(index) => (table, Some(index)),
            Err(_) => {
                let why = format!("tablet `{name}`: `{index}` is no tablet index");
                return Err(Error::InvalidRequest(why));
            }
        },
        None => (name, None),
    };
    let mut tablets: Vec<TabletId> =
        ids.into_iter().filter(|id| id.table_name() == Some(table)).cloned().collect();
    tablets.sort();
    if tablets.is_empty() {
        return Err(Error::NoSuchTable(table.to_owned()));
    }
    let Some(index) = index else { return Ok(tablets) };
    match tablets.into_iter().find(|id| matches!(id, TabletId::Table(_, p) if p.index == index)) {
        Some(id) => Ok(vec![id]),
        None => Err(Error::InvalidRequest(format!("table {table} has no tablet {index}"))),
    }
}

/// The tablet of `tablets` (one table's, in hash order) that owns `hash`.
pub fn owning(tablets: &[TabletId], hash: u16) -> TabletId {
    let Some(TabletId::Table(name, part)) = tablets.first() else {
        unreachable!("a table has tablets: {tablets:?}")
    };
    assert_eq!(tablets.len(), usize::from(part.count), "every tablet of {name}");
    TabletId::Table(name.clone(), Part::owning(part.count, hash))
}

/// The tablets of `tablets` (table `table`'s, in hash order) that `statement` goes to.
pub fn statement(
    tablets: &[TabletId],
    table: &CqlTable,
    statement: &Statement,
    plants: Plants,
) -> Vec<TabletId> {
    let hash = match plants.contains(Plant::RouteFirstHashColumn) {
        false => partition_hash(table, statement),
        true => {
            let mut first_only = table.clone();
            first_only.hash_key.truncate(1);
            partition_hash(&first_only, statement)
        }
    };
    match hash {
        Some(hash) => vec![owning(tablets, hash)],
        None => tablets.to_vec(),
    }
}

/// The tablet a read of `path` goes to: of `tablets` (what a `table=` named: a table's
/// every tablet, or one), the one holding the document (one named tablet: that one).
pub fn path(tablets: &[TabletId], path: &DocPath) -> TabletId {
    match tablets {
        [one] => one.clone(),
        _ => owning(tablets, path.doc_key.hash().unwrap_or(0)),
    }
}
