//! The simulated tablet servers as madsim nodes: each runs a receiver task (envelopes
//! from its endpoint into its node's replicas) and a ticker task (every replica ticks every
//! [`TICK`] of simulated time). A tablet server's engine [`Node`] lives in a shared
//! [`Slot`] that the executor (the clients and the faults, on madsim's main node) also
//! reaches, as a co-located client would; what the replicas have to send goes to the
//! slot's outbox and leaves with the node's tasks. Killing the madsim node stops its tasks
//! and unbinds its endpoint: messages in flight to it are dropped, as the network drops
//! packets to a dead host. A group of one sends nothing; its ticks change nothing.

use docsim_engine::{Envelope, ErrorKind, Node, TabletId};
use madsim::net::Endpoint;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Raft's tick.
pub const TICK: Duration = Duration::from_millis(10);
const PORT: u16 = 7100;
const TAG: u64 = 1;

/// One tablet server's state, shared between its madsim node's tasks and the executor.
pub struct Slot {
    /// The engine's node (its power may be off).
    pub node: Node,
    /// Envelopes waiting for the node's tasks to send.
    pub outbox: Vec<(TabletId, Envelope)>,
    /// This node's clock offset from true simulated time, in microseconds.
    pub skew_us: i64,
    /// A replica's armed power cut fired: the executor cuts the power.
    pub crashed: bool,
    /// How many times the node restarted.
    pub incarnation: u64,
    /// Errors that stopped a replica (not a power cut), by message.
    pub refused: Vec<String>,
    /// How long each of this node's log syncs takes (a slow disk; zero: instant).
    pub sync_latency: Duration,
    /// The node's sync count when its output last left.
    pub syncs_sent: u64,
}

impl Slot {
    /// A slot for `node`, powered as it is.
    pub fn new(node: Node) -> Slot {
        Slot {
            node,
            outbox: Vec::new(),
            skew_us: 0,
            crashed: false,
            incarnation: 0,
            refused: Vec::new(),
            sync_latency: Duration::ZERO,
            syncs_sent: 0,
        }
    }

    /// Whether the node runs: powered, and no armed power cut has fired in it.
    pub fn running(&self) -> bool {
        self.node.powered() && !self.crashed && !self.node.cut_fired()
    }
}

pub type Shared = Arc<Mutex<Slot>>;

/// The simulated time every node's physical clock derives from.
#[derive(Clone, Copy)]
pub struct World {
    pub start: madsim::time::Instant,
}

impl World {
    /// A node's physical clock: simulated time since the run began, plus its skew.
    pub fn now_us(&self, skew_us: i64) -> u64 {
        let elapsed_us = self.start.elapsed().as_micros() as i64;
        (1_000_000 + elapsed_us + skew_us).max(1) as u64
    }
}

/// The address of node `id` (1-based).
pub fn addr(id: u64) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, id as u8)), PORT)
}

/// Create node `id`'s madsim node; it starts serving at once (and again after every
/// `restart`).
pub fn spawn_node(id: u64, slot: Shared, world: World) -> madsim::runtime::NodeHandle {
    madsim::runtime::Handle::current()
        .create_node()
        .name(format!("n{id}"))
        .ip(addr(id).ip())
        .init(move || serve(id, slot.clone(), world))
        .build()
}

async fn serve(id: u64, slot: Shared, world: World) {
    let endpoint = Arc::new(Endpoint::bind(addr(id)).await.expect("a node binds its address"));
    madsim::task::spawn(tick(slot.clone(), world, endpoint.clone()));
    while let Ok((payload, _)) = endpoint.recv_from_raw(TAG).await {
        let (tablet, envelope) =
            *payload.downcast::<(TabletId, Envelope)>().expect("nodes send envelopes");
        let (out, hold) =
            with_node(&slot, world, |node, now_us| node.receive(&tablet, envelope, now_us));
        send(&slot, &endpoint, out, hold).await;
    }
}

async fn tick(slot: Shared, world: World, endpoint: Arc<Endpoint>) {
    loop {
        madsim::time::sleep(TICK).await;
        let (out, hold) = with_node(&slot, world, |node, now_us| node.tick(now_us));
        send(&slot, &endpoint, out, hold).await;
    }
}

/// Run `f` on the slot's node (if it runs); returns what is to be sent, outbox included,
/// and how long a slow disk holds it back (the node syncs before its output leaves: on a
/// slow disk, it leaves once the sync's latency has passed).
fn with_node(
    slot: &Shared,
    world: World,
    f: impl FnOnce(&mut Node, u64) -> docsim_engine::Output,
) -> (Vec<(TabletId, Envelope)>, Duration) {
    let mut slot = slot.lock().expect("slot lock");
    let slot = &mut *slot;
    if !slot.running() {
        return (Vec::new(), Duration::ZERO);
    }
    let now_us = world.now_us(slot.skew_us);
    let out = crate::cost::timed(crate::cost::Part::Replicas, || f(&mut slot.node, now_us));
    slot.outbox.extend(out.envelopes);
    slot.crashed |= out.crashed;
    for (tablet, e) in out.errors {
        match e.kind() {
            // A log write failed under a replica: the tablet server stops (YB's tserver
            // treats a WAL write error as fatal), and restarts once the disk is mended.
            ErrorKind::Io | ErrorKind::DiskFull => slot.crashed = true,
            _ => slot.refused.push(format!("{tablet:?}: {e}")),
        }
    }
    let syncs = slot.node.syncs();
    let synced = syncs != slot.syncs_sent;
    slot.syncs_sent = syncs;
    let hold = if synced { slot.sync_latency } else { Duration::ZERO };
    (std::mem::take(&mut slot.outbox), hold)
}

/// Send what a node produced, after `hold` (a slow sync); a power cut armed for after
/// this send fires once it left. docsim's modelling choice: the task that carries the
/// output waits — the receive loop takes no message, or the ticker no tick — while the
/// node's other task and the executor's calls go on.
async fn send(slot: &Shared, endpoint: &Endpoint, out: Vec<(TabletId, Envelope)>, hold: Duration) {
    if !hold.is_zero() {
        madsim::time::sleep(hold).await;
    }
    let fires = {
        let mut slot = slot.lock().expect("slot lock");
        slot.running() && slot.node.crash_after_send(&out)
    };
    for (tablet, envelope) in out {
        let to = addr(envelope.to);
        // A send to a node that is down fails like a lost packet: Raft retries.
        let _ = endpoint.send_to_raw(to, TAG, Box::new((tablet, envelope))).await;
    }
    if fires {
        slot.lock().expect("slot lock").crashed = true;
    }
}
